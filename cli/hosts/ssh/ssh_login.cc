#include "hosts/ssh/ssh_login.h"

#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "base/units.h"

namespace ernic::ssh_login {
namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// Turns libssh's connect error into the cause a user acts on.
std::string connect_failure(const std::string& error, std::chrono::milliseconds timeout) {
  std::string text = lower(error);
  if (text.find("connection refused") != std::string::npos) {
    return "connection refused";
  }
  if (text.find("timeout") != std::string::npos || text.find("timed out") != std::string::npos) {
    return fmt::format("timed out after {} (connect_timeout)", seconds_text(timeout));
  }
  if (text.find("no route to host") != std::string::npos) {
    return "no route to host";
  }
  if (text.find("network is unreachable") != std::string::npos) {
    return "network is unreachable";
  }
  if (text.find("resolve") != std::string::npos || text.find("not known") != std::string::npos) {
    return "cannot resolve the host name (" + error + ")";
  }
  return error;
}

std::string server_key_fingerprint(ssh_session session) {
  ssh_key key = nullptr;
  if (ssh_get_server_publickey(session, &key) != SSH_OK) {
    return "unknown key";
  }
  unsigned char* hash = nullptr;
  size_t length = 0;
  std::string text = "unknown key";
  if (ssh_get_publickey_hash(key, SSH_PUBLICKEY_HASH_SHA256, &hash, &length) == SSH_OK) {
    char* printable = ssh_get_fingerprint_hash(SSH_PUBLICKEY_HASH_SHA256, hash, length);
    if (printable != nullptr) {
      text = fmt::format("{} key {}", ssh_key_type_to_char(ssh_key_type(key)), printable);
      ssh_string_free_char(printable);
    }
    ssh_clean_pubkey_hash(&hash);
  }
  ssh_key_free(key);
  return text;
}

class HopSetup {
 public:
  HopSetup(const SshEndpoint& endpoint, const SshConnectOptions& options, std::string who)
      : endpoint_(endpoint), options_(options), who_(std::move(who)) {}

  // Connects (over `fd` when given, e.g. a tunnel), verifies the host key, authenticates.
  SessionPtr connect(int fd) {
    SessionPtr session(ssh_new());
    if (!session) {
      throw SshError(who_ + ": cannot allocate an SSH session");
    }
    ssh_session s = session.get();
    int verbosity = SSH_LOG_NOLOG;
    int port = endpoint_.port;
    int no = 0;
    int yes = 1;
    ssh_options_set(s, SSH_OPTIONS_LOG_VERBOSITY, &verbosity);
    ssh_options_set(s, SSH_OPTIONS_PROCESS_CONFIG, &no);
    ssh_options_set(s, SSH_OPTIONS_HOST, endpoint_.host.c_str());
    ssh_options_set(s, SSH_OPTIONS_PORT, &port);
    ssh_options_set(s, SSH_OPTIONS_NODELAY, &yes);
    if (!endpoint_.user.empty()) {
      ssh_options_set(s, SSH_OPTIONS_USER, endpoint_.user.c_str());
    }
    ssh_options_set(s, SSH_OPTIONS_KNOWNHOSTS, known_hosts().c_str());
    set_timeout(s, options_.connect_timeout);
    if (fd >= 0) {
      socket_t socket = fd;
      ssh_options_set(s, SSH_OPTIONS_FD, &socket);
    }
    if (ssh_connect(s) != SSH_OK) {
      throw SshError(
          fmt::format("{}: {}", who_, connect_failure(ssh_get_error(s), options_.connect_timeout)));
    }
    verify_host_key(s);
    authenticate(s);
    return session;
  }

 private:
  std::string known_hosts() const {
    return (options_.known_hosts.empty() ? default_known_hosts() : options_.known_hosts).string();
  }

  void verify_host_key(ssh_session s) {
    if (options_.host_key_policy == HostKeyPolicy::kIgnore) {
      std::string message =
          fmt::format("warning: {}: host key ({}) NOT verified because host_key_policy is ignore",
                      who_, server_key_fingerprint(s));
      if (options_.warn) {
        options_.warn(message);
      } else {
        fmt::print(stderr, "{}\n", message);
      }
      return;
    }
    switch (ssh_session_is_known_server(s)) {
      case SSH_KNOWN_HOSTS_OK:
        return;
      case SSH_KNOWN_HOSTS_CHANGED:
        throw SshError(fmt::format(
            "{}: host key mismatch: the host offered {}, which differs from the key recorded in "
            "{}; refusing to connect (if the host was reinstalled, remove the old entry with "
            "ssh-keygen -R)",
            who_, server_key_fingerprint(s), known_hosts()));
      case SSH_KNOWN_HOSTS_OTHER:
        throw SshError(fmt::format(
            "{}: host key mismatch: the host offered {}, but {} records a key of another type "
            "for it; refusing to connect",
            who_, server_key_fingerprint(s), known_hosts()));
      case SSH_KNOWN_HOSTS_NOT_FOUND:
      case SSH_KNOWN_HOSTS_UNKNOWN:
        if (options_.host_key_policy == HostKeyPolicy::kStrict) {
          throw SshError(
              fmt::format("{}: host key ({}) is not in {} and host_key_policy is strict; add it "
                          "(ssh-keyscan -p {} {} >> {}) or set host_key_policy: accept-new",
                          who_, server_key_fingerprint(s), known_hosts(), endpoint_.port,
                          endpoint_.host, known_hosts()));
        }
        accept_new_key(s);
        return;
      case SSH_KNOWN_HOSTS_ERROR:
      default:
        throw SshError(fmt::format("{}: cannot check the host key against {}: {}", who_,
                                   known_hosts(), ssh_get_error(s)));
    }
  }

  void accept_new_key(ssh_session s) {
    std::error_code ignored;
    std::filesystem::create_directories(std::filesystem::path(known_hosts()).parent_path(),
                                        ignored);
    if (ssh_session_update_known_hosts(s) != SSH_OK) {
      throw SshError(fmt::format("{}: cannot add the host key to {}: {}", who_, known_hosts(),
                                 ssh_get_error(s)));
    }
  }

  void authenticate(ssh_session s) {
    std::string user = endpoint_.user.empty() ? local_user_name() : endpoint_.user;
    if (!endpoint_.key.empty()) {
      ssh_key key = nullptr;
      if (ssh_pki_import_privkey_file(endpoint_.key.c_str(), nullptr, nullptr, nullptr, &key) !=
          SSH_OK) {
        throw SshError(
            fmt::format("{}: cannot read the private key {} (missing, unreadable or protected by a "
                        "passphrase; use the agent for those)",
                        who_, endpoint_.key.string()));
      }
      int rc = ssh_userauth_publickey(s, nullptr, key);
      ssh_key_free(key);
      if (rc == SSH_AUTH_SUCCESS) {
        return;
      }
      throw SshError(fmt::format(
          "{}: authentication failed for user {} with key {}{}", who_, user, endpoint_.key.string(),
          rc == SSH_AUTH_ERROR ? std::string(": ") + ssh_get_error(s) : std::string()));
    }
    std::string tried;
    if (std::getenv("SSH_AUTH_SOCK") != nullptr) {
      if (ssh_userauth_agent(s, nullptr) == SSH_AUTH_SUCCESS) {
        return;
      }
      tried = "the SSH agent, ";
    }
    if (ssh_userauth_publickey_auto(s, nullptr, nullptr) == SSH_AUTH_SUCCESS) {
      return;
    }
    throw SshError(fmt::format("{}: authentication failed for user {} (tried {}~/.ssh/id_* keys)",
                               who_, user, tried));
  }

  const SshEndpoint& endpoint_;
  const SshConnectOptions& options_;
  std::string who_;
};

}  // namespace

std::string local_user_name() {
  if (const passwd* entry = getpwuid(getuid()); entry != nullptr) {
    return entry->pw_name;
  }
  return "root";
}

std::filesystem::path default_known_hosts() {
  const char* home = std::getenv("HOME");
  return std::filesystem::path(home != nullptr ? home : "/root") / ".ssh" / "known_hosts";
}

std::string seconds_text(std::chrono::milliseconds duration) {
  return format_duration(std::chrono::duration_cast<std::chrono::nanoseconds>(duration));
}

void enable_tcp_keepalive(int fd, std::chrono::milliseconds interval) {
  if (fd < 0 || interval.count() <= 0) {
    return;
  }
  int on = 1;
  int seconds = std::max(1, static_cast<int>(interval.count() / 1000));
  int probes = 2;
  unsigned int user_timeout = static_cast<unsigned int>(interval.count()) * 3;
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &seconds, sizeof seconds);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &seconds, sizeof seconds);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof probes);
  setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout, sizeof user_timeout);
}

void set_timeout(ssh_session session, std::chrono::milliseconds timeout) {
  long seconds = static_cast<long>(timeout.count() / 1000);
  long microseconds = static_cast<long>(timeout.count() % 1000) * 1000;
  ssh_options_set(session, SSH_OPTIONS_TIMEOUT, &seconds);
  ssh_options_set(session, SSH_OPTIONS_TIMEOUT_USEC, &microseconds);
}

SessionPtr connect_hop(const SshEndpoint& endpoint, const SshConnectOptions& options,
                       const std::string& who, int fd) {
  return HopSetup(endpoint, options, who).connect(fd);
}

}  // namespace ernic::ssh_login

namespace ernic {

std::string_view host_key_policy_name(HostKeyPolicy policy) {
  switch (policy) {
    case HostKeyPolicy::kStrict:
      return "strict";
    case HostKeyPolicy::kAcceptNew:
      return "accept-new";
    case HostKeyPolicy::kIgnore:
      return "ignore";
  }
  return "strict";
}

std::optional<HostKeyPolicy> parse_host_key_policy(std::string_view text) {
  if (text == "strict") {
    return HostKeyPolicy::kStrict;
  }
  if (text == "accept-new") {
    return HostKeyPolicy::kAcceptNew;
  }
  if (text == "ignore") {
    return HostKeyPolicy::kIgnore;
  }
  return std::nullopt;
}

std::string SshEndpoint::display() const {
  std::string host_part = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return fmt::format("{}@{}:{}", user.empty() ? ssh_login::local_user_name() : user, host_part,
                     port);
}

}  // namespace ernic
