#include "frontend/verbs_device.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace ernic::emu::verbs_device {

std::optional<Gid> gid_bytes(const std::string& text) {
  Gid gid{};
  if (inet_pton(AF_INET6, text.c_str(), gid.data()) == 1) {
    return gid;
  }
  in_addr v4{};
  if (inet_pton(AF_INET, text.c_str(), &v4) == 1) {
    gid[10] = 0xff;
    gid[11] = 0xff;
    std::memcpy(&gid[12], &v4, 4);
    return gid;
  }
  return std::nullopt;
}

std::string gid_text(const Gid& gid) {
  char out[INET6_ADDRSTRLEN] = {};
  const bool v4_mapped =
      std::all_of(gid.begin(), gid.begin() + 10, [](auto b) { return b == 0; }) &&
      gid[10] == 0xff && gid[11] == 0xff;
  if (v4_mapped) {
    inet_ntop(AF_INET, &gid[12], out, sizeof out);
  } else {
    inet_ntop(AF_INET6, gid.data(), out, sizeof out);
  }
  return out;
}

std::string gid_sysfs(const Gid& gid) {
  std::string out;
  for (int i = 0; i < 16; i += 2) {
    char group[6];
    std::snprintf(group, sizeof group, "%s%02x%02x", i == 0 ? "" : ":", gid[i], gid[i + 1]);
    out += group;
  }
  return out;
}

std::uint64_t node_guid(const std::string& mac) {
  unsigned int m[6] = {};
  if (std::sscanf(mac.c_str(), "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]) !=
      6) {
    return 0;
  }
  const std::uint64_t eui[8] = {m[0] ^ 2u, m[1], m[2], 0xff, 0xfe, m[3], m[4], m[5]};
  std::uint64_t guid = 0;
  for (std::uint64_t byte : eui) {
    guid = (guid << 8) | (byte & 0xff);
  }
  return guid;
}

}  // namespace ernic::emu::verbs_device
