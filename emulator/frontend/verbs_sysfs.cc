// The sysfs folder through which libibverbs discovers an instance's device (SYSFS_PATH).
#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>

#include "base/durable_file.h"
#include "frontend/verbs_device.h"

namespace ernic::emu::verbs_device {
namespace {

void write_attribute(const std::filesystem::path& path, const std::string& value) {
  write_file_durably(path, value + '\n', {.durability = Durability::kDerived});
}

}  // namespace

void write_sysfs(const std::string& root, const SysfsDevice& device) {
  namespace fs = std::filesystem;
  // The uverbs ABI libibverbs 44 speaks (IB_USER_VERBS_MIN_ABI_VERSION and MAX are both 6).
  write_attribute(fs::path(root) / "class/infiniband_verbs/abi_version", "6");
  const fs::path verbs = fs::path(root) / "class/infiniband_verbs/ernic_uverbs0";
  write_attribute(verbs / "ibdev", device.name);
  // 0:0: no character device number to compare with what the program opens.
  write_attribute(verbs / "dev", "0:0");
  write_attribute(verbs / "abi_version", "1");
  const fs::path ib = fs::path(root) / "class/infiniband" / device.name;
  if (!device.socket_path.empty()) {
    write_attribute(ib / "ernic_socket", device.socket_path);
  }
  if (!device.region_path.empty()) {
    write_attribute(ib / "ernic_region", device.region_path);
  }
  write_attribute(ib / "node_type", "1: CA");
  const std::uint64_t guid = node_guid(device.mac);
  const std::string guid_text =
      fmt::format("{:04x}:{:04x}:{:04x}:{:04x}", guid >> 48, (guid >> 32) & 0xffff,
                  (guid >> 16) & 0xffff, guid & 0xffff);
  write_attribute(ib / "node_guid", guid_text);
  write_attribute(ib / "sys_image_guid", guid_text);
  write_attribute(ib / "fw_ver", kFirmware);
  write_attribute(ib / "hca_type", "ERNIC");
  write_attribute(ib / "device/vendor", fmt::format("{:#06x}", kVendor));
  write_attribute(ib / "device/device", fmt::format("{:#06x}", kDevice));
  write_attribute(ib / "device/subsystem_vendor", fmt::format("{:#06x}", kSubsystemVendor));
  write_attribute(ib / "device/subsystem_device", fmt::format("{:#06x}", kSubsystemDevice));
  write_attribute(ib / "device/modalias",
                  fmt::format("pci:v{:08X}d{:08X}sv{:08X}sd{:08X}bc02sc00i00", kVendor, kDevice,
                              kSubsystemVendor, kSubsystemDevice));
  const fs::path port = ib / "ports/1";
  write_attribute(port / "state", "4: ACTIVE");
  write_attribute(port / "phys_state", "5: LinkUp");
  write_attribute(port / "link_layer", "Ethernet");
  write_attribute(port / "rate", "100 Gb/sec (4X EDR)");
  for (std::size_t i = 0; i < device.gids.size(); ++i) {
    const auto gid = gid_bytes(device.gids[i]);
    if (!gid) {
      throw std::runtime_error("GID '" + device.gids[i] + "' is neither IPv6 nor IPv4");
    }
    write_attribute(port / "gids" / std::to_string(i), gid_sysfs(*gid));
    write_attribute(port / "gid_attrs/types" / std::to_string(i), "RoCE v2");
  }
}

}  // namespace ernic::emu::verbs_device
