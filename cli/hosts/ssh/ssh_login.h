#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>

#include <libssh/libssh.h>

#include "hosts/ssh/ssh_connection.h"

// Logging in to one SSH hop: connecting, verifying the host key against known_hosts under the
// host key policy, and authenticating with a key file, the agent or ~/.ssh/id_*.
namespace ernic::ssh_login {

struct SessionDeleter {
  void operator()(ssh_session session) const {
    if (ssh_is_connected(session)) {
      ssh_disconnect(session);
    }
    ssh_free(session);
  }
};
using SessionPtr = std::unique_ptr<ssh_session_struct, SessionDeleter>;

// Connects (over `fd` when not -1, e.g. a tunnel), verifies the host key, authenticates; throws
// SshError whose message starts with `who`.
SessionPtr connect_hop(const SshEndpoint& endpoint, const SshConnectOptions& options,
                       const std::string& who, int fd);

// Makes the kernel notice a peer that stopped acknowledging, so a dead host ends the session
// instead of leaving it waiting forever; `interval` zero leaves the socket as it is.
void enable_tcp_keepalive(int fd, std::chrono::milliseconds interval);
// Bounds every blocking call of the session.
void set_timeout(ssh_session session, std::chrono::milliseconds timeout);
// The duration as errors print it (format_duration).
std::string seconds_text(std::chrono::milliseconds duration);
std::string local_user_name();
// ~/.ssh/known_hosts
std::filesystem::path default_known_hosts();

}  // namespace ernic::ssh_login
