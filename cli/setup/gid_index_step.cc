#include "setup/gid_index_step.h"

#include <arpa/inet.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <sstream>

#include "setup/step_support.h"
#include "setup/steps.h"

namespace ernic {
namespace {

using setup::field;

// "INDEX<TAB>GID<TAB>TYPE" for every GID slot in use (the type file of an unused slot cannot be
// read). Only shell builtins inside the loop: a table has up to 1024 slots (rxe's has), and a
// process per slot takes minutes on a guest under TCG.
constexpr const char* kGidTableScript = R"sh(p="$1/class/infiniband/$2/ports/$3"
if [ ! -d "$p/gids" ]; then echo "no GID table at $p/gids" >&2; exit 3; fi
for g in "$p"/gids/*; do
  i=${g##*/}
  v=
  read -r v 2>/dev/null < "$g" || [ -n "$v" ] || continue
  case $v in 0000:0000:0000:0000:0000:0000:0000:0000) continue ;; esac
  t=
  read -r t 2>/dev/null < "$p/gid_attrs/types/$i" || :
  printf '%s\t%s\t%s\n' "$i" "$v" "$t"
done)sh";

const ObjectSchema& gid_index_step_schema() {
  static const ObjectSchema schema = [] {
    FieldSchema device = field("device", ValueKind::kString, "RDMA device");
    device.default_text = "the fact rdma_device (from rdma-device or soft-roce)";
    FieldSchema port = field("port", ValueKind::kInteger, "Port of the device");
    port.minimum = 1;
    port.maximum = 255;
    port.default_text = "1";
    FieldSchema address = field("address", ValueKind::kString, "Address whose GID is wanted");
    address.default_text = "the host's test address";
    FieldSchema roce =
        field("roce_version", ValueKind::kEnum, "Which GID type wins when the address has both");
    roce.enum_values = {"v2", "v1"};
    roce.default_text = "v2";
    FieldSchema root = field("sysfs_root", ValueKind::kString, "Where sysfs is mounted");
    root.default_text = "/sys (or the host fact sysfs_root)";
    return ObjectSchema{
        "Looks up the GID index of the host's test address (perftest -x, "
        "ibv_rc_pingpong -g); records the facts gid_index, gid and gid_type",
        {device, port, address, roce, root}};
  }();
  return schema;
}

struct Settings {
  std::string device;
  std::string port;
  std::string address;
  bool prefer_v2 = true;
};

Settings settings_of(const Config& config, const Host& host, const HostFacts& facts) {
  Settings settings;
  auto fact = facts.find("rdma_device");
  settings.device = config.text("device", fact != facts.end() ? fact->second : "");
  settings.port = config.text("port", "1");
  settings.address = config.text("address", host.address());
  std::string version = config.text("roce_version", "v2");
  if (version != "v2" && version != "v1") {
    throw SetupError("gid-index: roce_version must be v2 or v1, found '" + version + "'");
  }
  settings.prefer_v2 = version == "v2";
  return settings;
}

std::optional<std::array<unsigned char, 16>> parse_ipv6(const std::string& text) {
  std::array<unsigned char, 16> bytes{};
  if (inet_pton(AF_INET6, text.c_str(), bytes.data()) != 1) {
    return std::nullopt;
  }
  return bytes;
}

bool is_v2(const std::string& type) {
  return type.find("v2") != std::string::npos;
}

class GidIndexStep : public SetupStep {
 public:
  std::string_view kind() const override { return "gid-index"; }
  std::string_view description() const override {
    return "Looks up the GID index of the host's test address in "
           "/sys/class/infiniband/DEV/ports/N/gids and gid_attrs/types, preferring RoCE v2";
  }
  const ObjectSchema& schema() const override { return gid_index_step_schema(); }

  std::vector<std::string> recorded_facts() const override {
    return {"gid_index", "gid", "gid_type"};
  }
  std::vector<std::string> describe(const Config& config, const Host& host) const override {
    Settings settings = settings_of(config, host, {});
    return {fmt::format(
        "find the GID index of {} in {}/class/infiniband/{}/ports/{}/gids on {} (prefer RoCE {})",
        settings.address, setup::sysfs_root(config, {}),
        settings.device.empty() ? "<rdma_device>" : settings.device, settings.port, host.name(),
        settings.prefer_v2 ? "v2" : "v1")};
  }

  void apply(const Config& config, Host& host, HostFacts& facts, OutputSink* log) const override {
    Settings settings = settings_of(config, host, facts);
    if (settings.device.empty()) {
      setup::fail(kind(), host,
                  "no RDMA device: give `device` or run the rdma-device (or soft-roce) step first");
    }
    auto wanted = gid_of_address(settings.address);
    if (!wanted) {
      setup::fail(kind(), host, fmt::format("'{}' is not an IP address", settings.address));
    }
    std::string root = setup::sysfs_root(config, facts);
    CommandResult listing =
        setup::run_script_checked(host, kind(), "reading the GID table", kGidTableScript,
                                  {root, settings.device, settings.port}, nullptr);
    std::vector<GidEntry> entries = parse_gid_listing(listing.out);
    auto chosen = choose_gid(entries, settings.address, settings.prefer_v2);
    if (!chosen) {
      std::string present;
      for (const GidEntry& entry : entries) {
        auto bytes = parse_ipv6(entry.gid);
        if (!bytes || *bytes == std::array<unsigned char, 16>{}) {
          continue;  // an unused slot
        }
        present += fmt::format("{}{} {} ({})", present.empty() ? "" : ", ", entry.index, entry.gid,
                               entry.type.empty() ? "type unknown" : entry.type);
      }
      setup::fail(kind(), host,
                  fmt::format("no GID of {} port {} holds {} ({}); GIDs present: {}",
                              settings.device, settings.port, settings.address, *wanted,
                              present.empty() ? "none" : present));
    }
    facts["gid_index"] = std::to_string(chosen->index);
    facts["gid"] = chosen->gid;
    facts["gid_type"] = chosen->type;
    setup::note(log, fmt::format("GID index {} ({}, {}) of {} on {}", chosen->index, chosen->gid,
                                 chosen->type.empty() ? "type unknown" : chosen->type,
                                 settings.device, host.name()));
  }
};

}  // namespace

std::vector<GidEntry> parse_gid_listing(std::string_view listing) {
  std::vector<GidEntry> entries;
  std::istringstream lines{std::string(listing)};
  std::string line;
  while (std::getline(lines, line)) {
    std::size_t first_tab = line.find('\t');
    if (first_tab == std::string::npos) {
      continue;
    }
    std::size_t second_tab = line.find('\t', first_tab + 1);
    GidEntry entry;
    try {
      entry.index = std::stoi(line.substr(0, first_tab));
    } catch (const std::exception&) {
      continue;
    }
    entry.gid = setup::trim(line.substr(first_tab + 1, second_tab == std::string::npos
                                                           ? std::string::npos
                                                           : second_tab - first_tab - 1));
    if (second_tab != std::string::npos) {
      entry.type = setup::trim(line.substr(second_tab + 1));
    }
    entries.push_back(std::move(entry));
  }
  // The shell lists 0 1 10 11 2 ...: the lowest index wins among equals.
  std::sort(entries.begin(), entries.end(),
            [](const GidEntry& a, const GidEntry& b) { return a.index < b.index; });
  return entries;
}

std::optional<std::string> gid_of_address(const std::string& address) {
  unsigned char v4[4];
  std::array<unsigned char, 16> bytes{};
  if (inet_pton(AF_INET, address.c_str(), v4) == 1) {
    bytes[10] = 0xff;
    bytes[11] = 0xff;
    std::memcpy(bytes.data() + 12, v4, 4);
  } else if (auto v6 = parse_ipv6(address)) {
    bytes = *v6;
  } else {
    return std::nullopt;
  }
  std::string text;
  for (int i = 0; i < 16; i += 2) {
    text += fmt::format("{}{:02x}{:02x}", i == 0 ? "" : ":", bytes[i], bytes[i + 1]);
  }
  return text;
}

std::optional<GidEntry> choose_gid(const std::vector<GidEntry>& entries, const std::string& address,
                                   bool prefer_v2) {
  auto wanted_text = gid_of_address(address);
  if (!wanted_text) {
    return std::nullopt;
  }
  auto wanted = parse_ipv6(*wanted_text);
  std::optional<GidEntry> fallback;
  for (const GidEntry& entry : entries) {
    if (parse_ipv6(entry.gid) != wanted) {
      continue;
    }
    if (is_v2(entry.type) == prefer_v2) {
      return entry;
    }
    if (!fallback) {
      fallback = entry;
    }
  }
  return fallback;
}

const SetupStep& gid_index_step() {
  static const GidIndexStep step;
  return step;
}

}  // namespace ernic
