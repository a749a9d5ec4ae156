#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

// Finding an RDMA device by its PCI identity, the only reliable way (names drifted between
// emulator versions and silently skipped tests).
namespace ernic {

struct PciIdentity {
  std::string vendor;  // four lower-case hex digits, e.g. "1dd8"
  std::string device;
  std::string subsystem_vendor;
  std::string subsystem_device;

  // "1dd8:1002:1dd8:5400"
  std::string display() const;
  bool operator==(const PciIdentity&) const = default;
};

// "0x1DD8", "1dd8", "0x01dd8" -> "1dd8"; nullopt for anything that is not a 16-bit hex number.
std::optional<std::string> normalize_pci_id(std::string_view text);

struct RdmaDeviceEntry {
  std::string name;
  std::optional<PciIdentity> pci;  // none for software devices (rxe) without a PCI parent
};

// Reads the listing the step's script prints: "NAME VENDOR DEVICE SUBVENDOR SUBDEVICE" per
// line, "-" for a missing file.
std::vector<RdmaDeviceEntry> parse_rdma_listing(std::string_view listing);

// "rxe0 (no PCI device), ernic0 (1dd8:1002:1dd8:5400)" or "none".
std::string describe_rdma_devices(const std::vector<RdmaDeviceEntry>& devices);

}  // namespace ernic
