// instance-device: a guest served by an embedded instance through its guest region sees the
// instance's verbs device. Inside the guest nothing describes it: this step writes the device's
// folder (the one the instance writes for programs on this machine, naming the guest's ivshmem
// device instead of a socket) where the provider's environment points libibverbs (SYSFS_PATH),
// and keeps ib_core from loading, because libibverbs asks the kernel first and reads the folder
// only when the kernel has no RDMA netlink.
#include <fmt/format.h>

#include "benchmarks/instance_device.h"
#include "frontend/verbs_device.h"
#include "frontend/verbs_environment.h"
#include "setup/step_support.h"
#include "setup/steps.h"

namespace ernic {
namespace {

constexpr const char* kRegionPlaceholder = "@ernic_region@";

// $1: the folder, $2: where the image carries the provider; then pairs of (file relative to the
// folder, content). The content kRegionPlaceholder
// becomes the ivshmem device's BAR 2 (write-combining where the BAR is prefetchable).
constexpr const char* kWriteFolderScript = R"sh(set -e
root=$1
library=$2
shift 2
if [ ! -e "$library/libernic-rdmav34.so" ]; then
  echo "the guest image has no ERNIC verbs provider in $library: build it with this ernicctl" \
    "(ernicctl image build --force RECIPE)" >&2
  exit 5
fi
device=
for d in /sys/bus/pci/devices/*; do
  if [ "$(cat "$d/vendor")" = 0x1af4 ] && [ "$(cat "$d/device")" = 0x1110 ]; then
    device=$d
    break
  fi
done
if [ -z "$device" ]; then
  echo "no ivshmem device (PCI 1af4:1110): the domain has no guest region" >&2
  exit 3
fi
region=$device/resource2
[ -e "${region}_wc" ] && region=${region}_wc
rm -rf "$root"
while [ $# -gt 1 ]; do
  mkdir -p "$(dirname "$root/$1")"
  if [ "$2" = @ernic_region@ ]; then
    printf '%s\n' "$region" > "$root/$1"
  else
    printf '%s' "$2" > "$root/$1"
  fi
  shift 2
done
echo 'install ib_core /bin/false' > /etc/modprobe.d/ernic-instance-device.conf
modprobe -r ib_uverbs >/dev/null 2>&1 || true
modprobe -r ib_core >/dev/null 2>&1 || true
if grep -q '^ib_core ' /proc/modules; then
  echo "ib_core is loaded and in use (soft-RoCE?): libibverbs would not read $root" >&2
  exit 4
fi
echo "device folder $root, region $region"
)sh";

std::vector<std::string> split_gids(const std::string& text) {
  std::vector<std::string> gids;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto comma = text.find(',', start);
    const std::string gid = text.substr(start, comma - start);
    if (!gid.empty()) {
      gids.push_back(gid);
    }
    if (comma == std::string::npos) {
      break;
    }
    start = comma + 1;
  }
  return gids;
}

class InstanceDeviceStep : public SetupStep {
 public:
  std::string_view kind() const override { return "instance-device"; }
  std::string_view description() const override {
    return "In a guest served by an embedded instance through its guest region: writes the "
           "instance's verbs device folder (SYSFS_PATH) naming the ivshmem device, and keeps "
           "ib_core from loading; run by itself on such guests before the scenario's steps";
  }
  const ObjectSchema& schema() const override {
    static const ObjectSchema schema{"The embedded instance's verbs device in a guest", {}};
    return schema;
  }
  std::vector<std::string> recorded_facts() const override { return {"rdma_device"}; }
  std::vector<std::string> describe(const Config& /*config*/, const Host& host) const override {
    return {
        fmt::format("write the verbs device folder of emulator instance <instance> under {} "
                    "on {}, naming the ivshmem device (1af4:1110)'s BAR 2; keep ib_core "
                    "from loading",
                    emu::kGuestVerbsSysfs, host.name())};
  }
  void apply(const Config& /*config*/, Host& host, HostFacts& facts,
             OutputSink* log) const override {
    const std::string device = host_fact(facts, "verbs_device");
    if (host_fact(facts, "guest_region").empty() || device.empty()) {
      setup::fail(kind(), host, "the host is not served by an embedded instance's guest region");
    }
    std::vector<std::string> args{host_fact(facts, "verbs_sysfs"),
                                  host_fact(facts, "verbs_library_dir")};
    try {
      for (auto& [path, content] : emu::verbs_device::sysfs_files(
               {device, "", kRegionPlaceholder, host_fact(facts, "emulator_mac"),
                split_gids(host_fact(facts, "emulator_gids"))})) {
        args.push_back(path);
        args.push_back(content == std::string(kRegionPlaceholder) + "\n" ? kRegionPlaceholder
                                                                         : content);
      }
    } catch (const std::runtime_error& e) {
      setup::fail(kind(), host, e.what());
    }
    const CommandResult result = setup::run_script_checked(
        host, kind(), "writing the verbs device folder", kWriteFolderScript, args, log);
    facts["rdma_device"] = device;
    setup::note(log, setup::trim(result.out));
  }
};

}  // namespace

const SetupStep& instance_device_step() {
  static const InstanceDeviceStep step;
  return step;
}

}  // namespace ernic
