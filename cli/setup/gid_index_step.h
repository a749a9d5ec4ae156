#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

// Looking up the GID index of an address in /sys/class/infiniband/DEV/ports/N/gids.
namespace ernic {

struct GidEntry {
  int index = 0;
  std::string gid;   // as sysfs prints it: eight groups of four hex digits
  std::string type;  // gid_attrs/types/N: "RoCE v2", "IB/RoCE v1", or "" when unreadable
};

// Reads "INDEX<TAB>GID<TAB>TYPE" lines.
std::vector<GidEntry> parse_gid_listing(std::string_view listing);

// The GID an address is known by: IPv4 as an IPv4-mapped IPv6 address, IPv6 as itself.
// nullopt when `address` is neither.
std::optional<std::string> gid_of_address(const std::string& address);

// The entry holding `address`, preferring RoCE v2 (or v1 when prefer_v2 is false) when the
// address has entries of both types. nullopt when none holds it.
std::optional<GidEntry> choose_gid(const std::vector<GidEntry>& entries, const std::string& address,
                                   bool prefer_v2);

}  // namespace ernic
