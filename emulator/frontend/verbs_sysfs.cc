// The sysfs folder through which libibverbs discovers an instance's device (SYSFS_PATH).
#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>

#include "base/durable_file.h"
#include "frontend/verbs_device.h"

namespace ernic::emu::verbs_device {
std::vector<std::pair<std::string, std::string>> sysfs_files(const SysfsDevice& device) {
  std::vector<std::pair<std::string, std::string>> files;
  auto add = [&files](const std::string& path, const std::string& value) {
    files.emplace_back(path, value + '\n');
  };
  // The uverbs ABI libibverbs 44 speaks (IB_USER_VERBS_MIN_ABI_VERSION and MAX are both 6).
  add("class/infiniband_verbs/abi_version", "6");
  const std::string verbs = "class/infiniband_verbs/ernic_uverbs0/";
  add(verbs + "ibdev", device.name);
  // 0:0: no character device number to compare with what the program opens.
  add(verbs + "dev", "0:0");
  add(verbs + "abi_version", "1");
  const std::string ib = "class/infiniband/" + device.name + "/";
  if (!device.socket_path.empty()) {
    add(ib + "ernic_socket", device.socket_path);
  }
  if (!device.region_path.empty()) {
    add(ib + "ernic_region", device.region_path);
  }
  add(ib + "node_type", "1: CA");
  const std::uint64_t guid = node_guid(device.mac);
  const std::string guid_text =
      fmt::format("{:04x}:{:04x}:{:04x}:{:04x}", guid >> 48, (guid >> 32) & 0xffff,
                  (guid >> 16) & 0xffff, guid & 0xffff);
  add(ib + "node_guid", guid_text);
  add(ib + "sys_image_guid", guid_text);
  add(ib + "fw_ver", kFirmware);
  add(ib + "hca_type", "ERNIC");
  add(ib + "device/vendor", fmt::format("{:#06x}", kVendor));
  add(ib + "device/device", fmt::format("{:#06x}", kDevice));
  add(ib + "device/subsystem_vendor", fmt::format("{:#06x}", kSubsystemVendor));
  add(ib + "device/subsystem_device", fmt::format("{:#06x}", kSubsystemDevice));
  add(ib + "device/modalias", fmt::format("pci:v{:08X}d{:08X}sv{:08X}sd{:08X}bc02sc00i00", kVendor,
                                          kDevice, kSubsystemVendor, kSubsystemDevice));
  const std::string port = ib + "ports/1/";
  add(port + "state", "4: ACTIVE");
  add(port + "phys_state", "5: LinkUp");
  add(port + "link_layer", "Ethernet");
  add(port + "rate", "100 Gb/sec (4X EDR)");
  for (std::size_t i = 0; i < device.gids.size(); ++i) {
    const auto gid = gid_bytes(device.gids[i]);
    if (!gid) {
      throw std::runtime_error("GID '" + device.gids[i] + "' is neither IPv6 nor IPv4");
    }
    add(port + "gids/" + std::to_string(i), gid_sysfs(*gid));
    add(port + "gid_attrs/types/" + std::to_string(i), "RoCE v2");
  }
  return files;
}

void write_sysfs(const std::string& root, const SysfsDevice& device) {
  for (const auto& [path, content] : sysfs_files(device)) {
    write_file_durably(std::filesystem::path(root) / path, content,
                       {.durability = Durability::kDerived});
  }
}

}  // namespace ernic::emu::verbs_device
