#include <fmt/format.h>

#include "base/units.h"
#include "setup/step_support.h"
#include "setup/steps.h"

namespace ernic {
namespace {

using setup::field;

constexpr const char* kListDevices =
    R"sh(for d in "$1"/class/infiniband/*; do [ -e "$d" ] && echo "${d##*/}"; done; true)sh";
constexpr const char* kNetdevOfAddress =
    R"sh(ip -o addr show | awk -v a="$1" '{split($4, p, "/"); if (p[1] == a) {print $2; exit}}')sh";
// `rdma link` reports the port state; the rxe port turns ACTIVE once its netdev is up.
constexpr const char* kWaitActive = R"sh(i=0
while [ "$i" -lt "$2" ]; do
  out=$(rdma link show "$1/1" 2>&1)
  case "$out" in *"state ACTIVE"*) echo "$out"; exit 0;; esac
  i=$((i + 1)); sleep 0.2
done
echo "$out" >&2; exit 1)sh";

const ObjectSchema& soft_roce_step_schema() {
  static const ObjectSchema schema = [] {
    FieldSchema netdev = field("netdev", ValueKind::kString, "Network device to run RoCE on");
    netdev.default_text = "the interface holding the host's test address";
    FieldSchema name = field("name", ValueKind::kString, "Name of the rxe device");
    name.default_text = "rxe0";
    FieldSchema timeout = field("timeout", ValueKind::kDuration,
                                "How long the port may take to "
                                "become ACTIVE");
    timeout.default_text = "10s";
    FieldSchema root = field("sysfs_root", ValueKind::kString, "Where sysfs is mounted");
    root.default_text = "/sys (or the host fact sysfs_root)";
    return ObjectSchema{
        "Soft-RoCE (rdma_rxe) when the host has no RDMA device; records the "
        "fact rdma_device",
        {netdev, name, timeout, root}};
  }();
  return schema;
}

class SoftRoceStep : public SetupStep {
 public:
  std::string_view kind() const override { return "soft-roce"; }
  std::string_view description() const override {
    return "Creates a Soft-RoCE device (modprobe rdma_rxe; rdma link add rxe0 type rxe netdev "
           "DEV) when the host has no RDMA device, and waits until its port is ACTIVE";
  }
  const ObjectSchema& schema() const override { return soft_roce_step_schema(); }
  std::vector<Benchmark::Program> programs() const override {
    return {{"rdma", "iproute2"}, {"modprobe", "kmod"}};
  }

  std::vector<std::string> recorded_facts() const override { return {"rdma_device"}; }
  std::vector<std::string> describe(const Config& config, const Host& host) const override {
    std::string name = config.text("name", "rxe0");
    std::string netdev = config.text("netdev", "<interface of " + host.address() + ">");
    return {
        fmt::format("if {} has no RDMA device in {}/class/infiniband:", host.name(),
                    setup::sysfs_root(config, {})),
        "  modprobe rdma_rxe",
        fmt::format("  rdma link add {} type rxe netdev {}", name, netdev),
        fmt::format("verify: rdma link show {}/1 reports state ACTIVE", name),
    };
  }

  void apply(const Config& config, Host& host, HostFacts& facts, OutputSink* log) const override {
    std::string name = config.text("name", "rxe0");
    auto timeout = config.duration("timeout", std::chrono::seconds(10));
    std::string root = setup::sysfs_root(config, facts);
    CommandResult listed = setup::run_script_checked(host, kind(), "listing RDMA devices",
                                                     kListDevices, {root}, nullptr);
    std::string existing = setup::trim(listed.out);
    bool has_ours = ("\n" + existing + "\n").find("\n" + name + "\n") != std::string::npos;
    if (!existing.empty() && !has_ours) {
      for (char& c : existing) {
        c = c == '\n' ? ' ' : c;
      }
      setup::note(log, fmt::format("{} already has RDMA device(s) {}: no Soft-RoCE needed",
                                   host.name(), existing));
      return;
    }
    if (!has_ours) {
      std::string netdev = config.text("netdev", "");
      if (netdev.empty()) {
        netdev = setup::trim(setup::run_script_checked(host, kind(),
                                                       "finding the interface of " + host.address(),
                                                       kNetdevOfAddress, {host.address()}, nullptr)
                                 .out);
        if (netdev.empty()) {
          setup::fail(
              kind(), host,
              fmt::format("no interface holds the address {}; give `netdev`", host.address()));
        }
      }
      setup::run_script_checked(host, kind(), "modprobe rdma_rxe", "modprobe rdma_rxe", {}, log);
      setup::run_script_checked(host, kind(),
                                fmt::format("rdma link add {} type rxe netdev {}", name, netdev),
                                "rdma link add \"$1\" type rxe netdev \"$2\"", {name, netdev}, log);
    } else {
      setup::note(log, fmt::format("{} already exists on {}", name, host.name()));
    }
    long attempts = std::max<long>(1, static_cast<long>(timeout.count() / 200));
    CommandResult active = setup::run_script(host, kWaitActive, {name, std::to_string(attempts)},
                                             nullptr, timeout + std::chrono::seconds(10));
    if (!active.ok()) {
      setup::fail(kind(), host,
                  fmt::format("{} port 1 is not ACTIVE after {}: {}", name,
                              format_duration(timeout), setup::trim(active.err)));
    }
    facts["rdma_device"] = name;
    setup::note(log, fmt::format("{} is ACTIVE on {}", name, host.name()));
  }
};

}  // namespace

const SetupStep& soft_roce_step() {
  static const SoftRoceStep step;
  return step;
}

}  // namespace ernic
