#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "hosts/ssh/ssh_connection.h"
#include "image/guest_image.h"

namespace ernic {

// Readiness probes for a booting guest, one per stage after "domain running" and "address
// known". Each returns an empty string on success and otherwise what went wrong, so the caller
// can retry until its stage deadline and then name the stage in its error. With `via` (options
// with a jump host, see guest_ssh_options) they reach the guest through the jump host; nullptr:
// directly.

// Connects to address:port and reads the server's identification line ("SSH-2.0-...").
std::string probe_ssh_banner(const std::string& address, std::uint16_t port,
                             std::chrono::milliseconds timeout,
                             const SshConnectOptions* via = nullptr);

// Opens an SSH session, checks that the server's host key is one of `expected` (the keys saved
// when the image was built: no trust on first use), then logs in as `user` with `private_key`.
std::string verify_host_key_and_login(const std::string& address, std::uint16_t port,
                                      const std::vector<HostKey>& expected, const std::string& user,
                                      const std::filesystem::path& private_key,
                                      std::chrono::milliseconds timeout,
                                      const SshConnectOptions* via = nullptr);

}  // namespace ernic
