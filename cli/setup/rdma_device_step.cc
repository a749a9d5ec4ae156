#include "setup/rdma_device_step.h"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>

#include "setup/step_support.h"
#include "setup/steps.h"

namespace ernic {
namespace {

using setup::field;

// One line per device under SYSFS/class/infiniband; the PCI identity comes from the device's
// parent (DEV/device/), which software devices do not have.
constexpr const char* kDeviceListScript = R"sh(dir="$1/class/infiniband"
[ -d "$dir" ] || exit 0
for d in "$dir"/*; do
  [ -e "$d" ] || continue
  r() { v=$(cat "$d/device/$1" 2>/dev/null) && [ -n "$v" ] && printf '%s' "$v" || printf -; }
  printf '%s %s %s %s %s\n' "${d##*/}" "$(r vendor)" "$(r device)" "$(r subsystem_vendor)" "$(r subsystem_device)"
done)sh";

const ObjectSchema& rdma_device_step_schema() {
  static const ObjectSchema schema = [] {
    auto pci = std::make_shared<ObjectSchema>();
    pci->description = "PCI identity to match, hex (0x1dd8 or 1dd8); all four must match";
    for (const char* name : {"vendor", "device", "subsystem_vendor", "subsystem_device"}) {
      FieldSchema id = field(name, ValueKind::kString, std::string("PCI ") + name + " id");
      id.required = true;
      pci->fields.push_back(id);
    }
    FieldSchema pci_field = field("pci", ValueKind::kObject,
                                  "Find the device by PCI identity (the ERNIC emulator: vendor "
                                  "0x1dd8, device 0x1002, subsystem 0x1dd8:0x5400)");
    pci_field.object = pci;
    FieldSchema name = field("name", ValueKind::kString,
                             "Find the device by name instead (e.g. rxe0 for Soft-RoCE)");
    FieldSchema root = field("sysfs_root", ValueKind::kString, "Where sysfs is mounted");
    root.default_text = "/sys (or the host fact sysfs_root)";
    return ObjectSchema{"Finds the RDMA device benchmarks use; records the fact rdma_device",
                        {pci_field, name, root}};
  }();
  return schema;
}

struct Wanted {
  std::optional<PciIdentity> pci;
  std::string name;

  std::string display() const { return pci ? pci->display() : "name " + name; }
};

Wanted wanted_of(const Config& config) {
  Wanted wanted;
  wanted.name = config.text("name", "");
  if (config.has("pci")) {
    const Config pci = config.object("pci");
    PciIdentity identity;
    std::string* slots[] = {&identity.vendor, &identity.device, &identity.subsystem_vendor,
                            &identity.subsystem_device};
    const char* keys[] = {"vendor", "device", "subsystem_vendor", "subsystem_device"};
    for (int i = 0; i < 4; ++i) {
      std::string value = pci.text(keys[i], "");
      auto normalized = normalize_pci_id(value);
      if (!normalized) {
        throw SetupError(
            fmt::format("rdma-device: pci.{} must be a 16-bit hex id such as 0x1dd8, found '{}'",
                        keys[i], value));
      }
      *slots[i] = *normalized;
    }
    wanted.pci = identity;
  }
  if (!wanted.pci && wanted.name.empty()) {
    throw SetupError(
        "rdma-device: give either pci (vendor, device, subsystem_vendor, "
        "subsystem_device) or name");
  }
  if (wanted.pci && !wanted.name.empty()) {
    throw SetupError("rdma-device: give pci or name, not both");
  }
  return wanted;
}

class RdmaDeviceStep : public SetupStep {
 public:
  std::string_view kind() const override { return "rdma-device"; }
  std::string_view description() const override {
    return "Finds the RDMA device by PCI identity (vendor, device, subsystem vendor, subsystem "
           "device) or by name in /sys/class/infiniband; fails listing what it found";
  }
  const ObjectSchema& schema() const override { return rdma_device_step_schema(); }

  std::vector<std::string> recorded_facts() const override { return {"rdma_device"}; }
  std::vector<std::string> describe(const Config& config, const Host& host) const override {
    Wanted wanted = wanted_of(config);
    return {fmt::format("find the RDMA device with {} among {}/class/infiniband/*/device on {}",
                        wanted.display(), setup::sysfs_root(config, {}), host.name())};
  }

  void apply(const Config& config, Host& host, HostFacts& facts, OutputSink* log) const override {
    Wanted wanted = wanted_of(config);
    std::string root = setup::sysfs_root(config, facts);
    CommandResult listing = setup::run_script_checked(host, kind(), "listing RDMA devices",
                                                      kDeviceListScript, {root}, nullptr);
    std::vector<RdmaDeviceEntry> devices = parse_rdma_listing(listing.out);
    std::vector<const RdmaDeviceEntry*> matches;
    for (const RdmaDeviceEntry& device : devices) {
      bool match = wanted.pci ? device.pci == wanted.pci : device.name == wanted.name;
      if (match) {
        matches.push_back(&device);
      }
    }
    if (matches.empty()) {
      setup::fail(kind(), host,
                  fmt::format("no RDMA device matches {} in {}/class/infiniband; found: {}",
                              wanted.display(), root, describe_rdma_devices(devices)));
    }
    const RdmaDeviceEntry& chosen = *matches.front();
    facts["rdma_device"] = chosen.name;
    if (chosen.pci) {
      facts["rdma_pci"] = chosen.pci->display();
    }
    std::string others;
    for (std::size_t i = 1; i < matches.size(); ++i) {
      others += (others.empty() ? "" : ", ") + matches[i]->name;
    }
    setup::note(log, fmt::format("RDMA device {} on {}{}", chosen.name, host.name(),
                                 others.empty() ? "" : " (also matching: " + others + ")"));
  }
};

}  // namespace

std::string PciIdentity::display() const {
  return fmt::format("{}:{}:{}:{}", vendor, device, subsystem_vendor, subsystem_device);
}

std::optional<std::string> normalize_pci_id(std::string_view text) {
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    text.remove_prefix(2);
  }
  if (text.empty() || text.size() > 8) {
    return std::nullopt;
  }
  unsigned long value = 0;
  for (char c : text) {
    int digit = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
                : (c >= 'a' && c <= 'f')                    ? c - 'a' + 10
                : (c >= 'A' && c <= 'F')                    ? c - 'A' + 10
                                                            : -1;
    if (digit < 0) {
      return std::nullopt;
    }
    value = value * 16 + static_cast<unsigned long>(digit);
  }
  if (value > 0xffff) {
    return std::nullopt;
  }
  return fmt::format("{:04x}", value);
}

std::vector<RdmaDeviceEntry> parse_rdma_listing(std::string_view listing) {
  std::vector<RdmaDeviceEntry> devices;
  std::istringstream lines{std::string(listing)};
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    RdmaDeviceEntry entry;
    std::string ids[4];
    if (!(fields >> entry.name)) {
      continue;
    }
    fields >> ids[0] >> ids[1] >> ids[2] >> ids[3];
    std::optional<std::string> normalized[4];
    bool complete = true;
    for (int i = 0; i < 4; ++i) {
      normalized[i] = normalize_pci_id(ids[i]);
      complete = complete && normalized[i].has_value();
    }
    if (complete) {
      entry.pci = PciIdentity{*normalized[0], *normalized[1], *normalized[2], *normalized[3]};
    }
    devices.push_back(std::move(entry));
  }
  std::sort(devices.begin(), devices.end(),
            [](const RdmaDeviceEntry& a, const RdmaDeviceEntry& b) { return a.name < b.name; });
  return devices;
}

std::string describe_rdma_devices(const std::vector<RdmaDeviceEntry>& devices) {
  if (devices.empty()) {
    return "none";
  }
  std::string text;
  for (const RdmaDeviceEntry& device : devices) {
    text += fmt::format("{}{} ({})", text.empty() ? "" : ", ", device.name,
                        device.pci ? device.pci->display() : "no PCI device");
  }
  return text;
}

const SetupStep& rdma_device_step() {
  static const RdmaDeviceStep step;
  return step;
}

}  // namespace ernic
