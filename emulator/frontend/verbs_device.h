#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

// What a verbs program sees of an instance's device: the identity the instance publishes in a
// sysfs folder (write_verbs_sysfs) and the ERNIC verbs provider reports (provider/). One
// declaration, so that ibv_devinfo and the sysfs files never disagree.
namespace ernic::emu::verbs_device {

// The AMD Pensando ionic NIC the ERNIC project emulates (rocm-ernic's scripts match this tuple).
inline constexpr std::uint16_t kVendor = 0x1dd8;
inline constexpr std::uint16_t kDevice = 0x1002;
inline constexpr std::uint16_t kSubsystemVendor = 0x1dd8;
inline constexpr std::uint16_t kSubsystemDevice = 0x5400;
inline constexpr const char* kFirmware = "ernic-emulator 1";
inline constexpr int kMtu = 4096;

using Gid = std::array<std::uint8_t, 16>;
// An instance's GID text (IPv6, or IPv4 as RoCE v2 maps it to ::ffff:a.b.c.d) as 16 bytes.
std::optional<Gid> gid_bytes(const std::string& text);
// The text the instance's mesh knows a GID by: IPv4-mapped GIDs as dotted quads.
std::string gid_text(const Gid& gid);
// sysfs' form of a GID: eight groups of four hex digits.
std::string gid_sysfs(const Gid& gid);
// The node GUID a MAC gives by EUI-64, as a host-order number.
std::uint64_t node_guid(const std::string& mac);

struct SysfsDevice {
  std::string name;         // the IB device's name (ibv_devices), e.g. ernic_1
  std::string socket_path;  // the instance's shared-memory front end
  // The guest region the front end also serves (a file on the host, a PCI BAR's resource file
  // in a guest); the provider uses it instead of the socket when given.
  std::string region_path;
  std::string mac;
  std::vector<std::string> gids;
};
// The files of the folder libibverbs reads when SYSFS_PATH names it, relative to it, with their
// contents: class/infiniband_verbs/ernic_uverbs0 and class/infiniband/NAME. Throws
// std::runtime_error for a GID that is neither IPv6 nor IPv4.
std::vector<std::pair<std::string, std::string>> sysfs_files(const SysfsDevice& device);
// Writes sysfs_files(device) under `root`. Throws std::runtime_error naming the file it could not
// write.
void write_sysfs(const std::string& root, const SysfsDevice& device);

}  // namespace ernic::emu::verbs_device
