#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "hosts/ssh/ssh_connection.h"
#include "hosts/ssh/ssh_login.h"

// The first hop of a connection through a jump host (OpenSSH's ProxyJump): an authenticated
// session to the jump, a direct-tcpip channel from there to the target, and a thread that pumps
// bytes between that channel and one end of a socket pair. The other end is the target
// session's transport (SSH_OPTIONS_FD), so the target's key exchange, host key check and
// authentication run end to end, and the jump only ever sees ciphertext.
namespace ernic {

class SshTunnel {
 public:
  // Logs in to options.jump (its host key verified against options.jump_known_hosts, or
  // known_hosts when that is empty, under options.host_key_policy; within connect_timeout) and
  // opens a channel from it to host:port. Throws SshError starting with `who` and naming the
  // jump ("...: jump host root@10.1.2.1:22: connection refused").
  static std::unique_ptr<SshTunnel> open(const SshConnectOptions& options, const std::string& host,
                                         std::uint16_t port, const std::string& who);
  ~SshTunnel();
  SshTunnel(const SshTunnel&) = delete;
  SshTunnel& operator=(const SshTunnel&) = delete;

  // The local end: bytes written to it reach host:port. The caller owns it once released (a
  // libssh session given it as SSH_OPTIONS_FD closes it).
  int release_fd();
  // Empty while the tunnel carries bytes; otherwise why it ended, naming the jump host.
  std::string failure();

 private:
  SshTunnel() = default;
  void pump();
  void end(const std::string& reason);

  std::string jump_name_;  // "jump host root@10.1.2.1:22"
  std::string destination_;
  ssh_login::SessionPtr jump_;
  ssh_channel channel_ = nullptr;
  int pump_fd_ = -1;
  int released_fd_ = -1;
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::string failure_;
  std::thread pump_thread_;
};

// "jump host root@10.1.2.1:22"
std::string jump_host_name(const SshEndpoint& jump);

// "user@host[:port]" (also "host", "[v6::addr]:port"); throws std::runtime_error saying what a
// destination looks like.
SshEndpoint parse_ssh_destination(std::string_view text);

}  // namespace ernic
