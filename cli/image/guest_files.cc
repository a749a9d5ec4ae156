#include "image/guest_files.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "base/durable_file.h"

namespace ernic::guest_files {
namespace fs = std::filesystem;

std::string read_text(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}
void write_text(const fs::path& file, const std::string& content, fs::perms mode) {
  write_file_durably(file, content, {.permissions = mode});
}

void write_network_config(const fs::path& root) {
  write_text(root / "etc/systemd/network/90-ernic-dhcp.network",
             "[Match]\nName=en* eth*\n\n[Network]\nDHCP=ipv4\nLinkLocalAddressing=ipv6\n\n"
             "[DHCPv4]\nClientIdentifier=mac\n");
  write_text(root / "usr/local/sbin/ernic-net-config",
             fmt::format(R"(#!/bin/sh
# {0}=ADDRESS/PREFIX[,GATEWAY] on the kernel command line: a static address for the guest's
# Ethernet NIC. networkd uses the first matching .network file in name order across /etc, /run
# and /usr/lib, so 10-ernic-static wins over the DHCP default 90-ernic-dhcp.
spec=""
for word in $(cat /proc/cmdline); do
  case "$word" in
    {0}=*) spec="${{word#{0}=}}" ;;
  esac
done
[ -n "$spec" ] || exit 0
address="${{spec%%,*}}"
gateway=""
case "$spec" in
  *,*) gateway="${{spec#*,}}" ;;
esac
mkdir -p /run/systemd/network
{{
  printf '[Match]\nName=en* eth*\n\n[Network]\nAddress=%s\nLinkLocalAddressing=ipv6\n' "$address"
  if [ -n "$gateway" ]; then printf 'Gateway=%s\n' "$gateway"; fi
}} > /run/systemd/network/10-ernic-static.network
)",
                         kStaticAddressArg),
             fs::perms(0755));
  write_text(root / "etc/systemd/system/ernic-net-config.service",
             "[Unit]\nDescription=Static address from the kernel command line\n"
             "DefaultDependencies=no\nBefore=systemd-networkd.service network-pre.target\n"
             "Wants=network-pre.target\nAfter=local-fs.target\n\n"
             "[Service]\nType=oneshot\nExecStart=/usr/local/sbin/ernic-net-config\n\n"
             "[Install]\nWantedBy=sysinit.target\n");
}

void write_limits(const fs::path& root, const std::string& memlock) {
  // RDMA pins memory: the distro default (8 MiB) fails a 4 MiB perftest with a misleading
  // "Couldn't create CQ".
  write_text(root / "etc/security/limits.d/90-rdma-memlock.conf",
             fmt::format("* soft memlock {0}\n* hard memlock {0}\nroot soft memlock {0}\n"
                         "root hard memlock {0}\n",
                         memlock));
  write_text(root / "etc/systemd/system.conf.d/90-rdma-memlock.conf",
             fmt::format("[Manager]\nDefaultLimitMEMLOCK={}\n",
                         memlock == "unlimited" ? "infinity" : memlock));
}

}  // namespace ernic::guest_files
