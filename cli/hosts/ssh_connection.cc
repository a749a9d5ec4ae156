#include "hosts/ssh_connection.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <csignal>
#include <cstdlib>
#include <cstring>

#include "common/units.h"

namespace ernic {
namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

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

void set_timeout(ssh_session session, std::chrono::milliseconds timeout) {
  long seconds = static_cast<long>(timeout.count() / 1000);
  long microseconds = static_cast<long>(timeout.count() % 1000) * 1000;
  ssh_options_set(session, SSH_OPTIONS_TIMEOUT, &seconds);
  ssh_options_set(session, SSH_OPTIONS_TIMEOUT_USEC, &microseconds);
}

// Makes the kernel notice a peer that stopped acknowledging, so a dead host ends the session
// instead of leaving it waiting forever.
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

struct SessionDeleter {
  void operator()(ssh_session session) const {
    if (ssh_is_connected(session)) {
      ssh_disconnect(session);
    }
    ssh_free(session);
  }
};
using SessionPtr = std::unique_ptr<ssh_session_struct, SessionDeleter>;

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
  return fmt::format("{}@{}:{}", user.empty() ? local_user_name() : user, host_part, port);
}

std::string wrap_command(const CommandSpec& spec) {
  if (spec.argv.empty()) {
    throw SshError("empty command");
  }
  std::string line = R"(exec /bin/sh -c 'printf "ernic-pid:%s\n" "$$" >&2; exec "$@"' ernic)";
  if (!spec.env.empty()) {
    line += " env";
    for (const auto& [key, value] : spec.env) {
      line += " " + shell_quote(key + "=" + value);
    }
  }
  for (const auto& word : spec.argv) {
    line += " " + shell_quote(word);
  }
  return line;
}

// A direct-tcpip channel through the jump host, bridged to one end of a socket pair whose other
// end is the target session's transport. The pump thread is the only user of the jump session.
struct SshConnection::Tunnel {
  SessionPtr jump;
  ssh_channel channel = nullptr;
  int local_fd = -1;
  std::atomic<bool> stop{false};
  std::thread pump;

  ~Tunnel() {
    stop = true;
    if (pump.joinable()) {
      pump.join();
    }
    if (channel != nullptr) {
      ssh_channel_close(channel);
      ssh_channel_free(channel);
    }
    if (local_fd >= 0) {
      close(local_fd);
    }
  }

  void run() {
    char buffer[32768];
    bool local_open = true;
    while (!stop) {
      pollfd fds[2] = {{local_fd, static_cast<short>(local_open ? POLLIN : 0), 0},
                       {ssh_get_fd(jump.get()), POLLIN, 0}};
      ::poll(fds, 2, 20);
      if (local_open && (fds[0].revents & (POLLIN | POLLHUP)) != 0) {
        ssize_t count = read(local_fd, buffer, sizeof buffer);
        if (count > 0) {
          if (ssh_channel_write(channel, buffer, static_cast<uint32_t>(count)) == SSH_ERROR) {
            break;
          }
        } else if (count == 0 || (errno != EINTR && errno != EAGAIN)) {
          ssh_channel_send_eof(channel);
          local_open = false;
        }
      }
      for (;;) {
        int count = ssh_channel_read_nonblocking(channel, buffer, sizeof buffer, 0);
        if (count <= 0) {
          if (count < 0) {
            stop = true;
          }
          break;
        }
        for (int done = 0; done < count;) {
          ssize_t written = ::write(local_fd, buffer + done, static_cast<size_t>(count - done));
          if (written <= 0) {
            stop = true;
            break;
          }
          done += static_cast<int>(written);
        }
      }
      if (ssh_channel_is_eof(channel) != 0 || ssh_channel_is_closed(channel) != 0) {
        break;
      }
    }
    shutdown(local_fd, SHUT_RDWR);
  }
};

SshConnection::SshConnection(SshConnectOptions options) : options_(std::move(options)) {}

std::string SshConnection::who() const {
  std::string text = fmt::format("ssh to {} ({}", options_.label, options_.target.display());
  if (options_.jump) {
    text += " via " + options_.jump->display();
  }
  return text + ")";
}

std::shared_ptr<SshConnection> SshConnection::open(const SshConnectOptions& options) {
  std::shared_ptr<SshConnection> connection(new SshConnection(options));
  connection->connect();
  if (pipe2(connection->wake_pipe_, O_CLOEXEC | O_NONBLOCK) != 0) {
    throw SshError(connection->who() + ": cannot create a pipe: " + std::strerror(errno));
  }
  connection->io_thread_ = std::thread([raw = connection.get()] { raw->io_loop(); });
  return connection;
}

void SshConnection::connect() {
  int transport_fd = -1;
  if (options_.jump) {
    tunnel_ = std::make_unique<Tunnel>();
    std::string jump_who =
        fmt::format("ssh to {} (jump host {})", options_.label, options_.jump->display());
    tunnel_->jump = HopSetup(*options_.jump, options_, jump_who).connect(-1);
    enable_tcp_keepalive(ssh_get_fd(tunnel_->jump.get()), options_.keepalive);
    tunnel_->channel = ssh_channel_new(tunnel_->jump.get());
    if (tunnel_->channel == nullptr ||
        ssh_channel_open_forward(tunnel_->channel, options_.target.host.c_str(),
                                 options_.target.port, "127.0.0.1", 0) != SSH_OK) {
      throw SshError(fmt::format("{}: the jump host cannot reach {}:{}: {}", who(),
                                 options_.target.host, options_.target.port,
                                 ssh_get_error(tunnel_->jump.get())));
    }
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
      throw SshError(who() + ": cannot create a socket pair: " + std::strerror(errno));
    }
    tunnel_->local_fd = pair[0];
    transport_fd = pair[1];
    tunnel_->pump = std::thread([tunnel = tunnel_.get()] { tunnel->run(); });
  }
  SessionPtr session = HopSetup(options_.target, options_, who()).connect(transport_fd);
  if (!options_.jump) {
    enable_tcp_keepalive(ssh_get_fd(session.get()), options_.keepalive);
  }
  // From here on every blocking call (opening a channel, writing, closing) is bounded by
  // alive_timeout: a live host answers those in milliseconds.
  set_timeout(session.get(), options_.alive_timeout);
  event_ = ssh_event_new();
  if (event_ == nullptr || ssh_event_add_session(event_, session.get()) != SSH_OK) {
    throw SshError(who() + ": cannot set up packet processing");
  }
  session_ = session.release();
}

SshConnection::~SshConnection() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake();
  if (io_thread_.joinable()) {
    io_thread_.join();
  }
  if (event_ != nullptr) {
    if (session_ != nullptr) {
      ssh_event_remove_session(event_, session_);
    }
    ssh_event_free(event_);
  }
  if (session_ != nullptr) {
    SessionDeleter()(session_);
  }
  tunnel_.reset();
  for (int fd : wake_pipe_) {
    if (fd >= 0) {
      close(fd);
    }
  }
}

void SshConnection::wake() {
  if (wake_pipe_[1] >= 0) {
    char byte = 1;
    [[maybe_unused]] ssize_t ignored = ::write(wake_pipe_[1], &byte, 1);
  }
}

void SshConnection::io_loop() {
  auto next_keepalive = Clock::now() + options_.keepalive;
  for (;;) {
    int socket_fd = -1;
    {
      std::lock_guard lock(mutex_);
      if (stopping_) {
        return;
      }
      if (lost_.empty()) {
        socket_fd = ssh_get_fd(session_);
      }
    }
    pollfd fds[2] = {{wake_pipe_[0], POLLIN, 0}, {socket_fd, POLLIN, 0}};
    ::poll(fds, 2, 100);
    if ((fds[0].revents & POLLIN) != 0) {
      char drain[64];
      while (read(wake_pipe_[0], drain, sizeof drain) > 0) {
      }
    }
    std::lock_guard lock(mutex_);
    if (stopping_) {
      return;
    }
    if (!lost_.empty()) {
      continue;
    }
    int rc = ssh_event_dopoll(event_, 0);
    if (rc == SSH_ERROR || (ssh_get_status(session_) & (SSH_CLOSED | SSH_CLOSED_ERROR)) != 0) {
      lose_locked(fmt::format("{}: connection lost: {}", who(), ssh_get_error(session_)));
      continue;
    }
    if (options_.keepalive.count() > 0 && Clock::now() >= next_keepalive) {
      ssh_send_ignore(session_, "");
      next_keepalive = Clock::now() + options_.keepalive;
    }
  }
}

void SshConnection::lose_locked(const std::string& reason) {
  if (!lost_.empty()) {
    return;
  }
  lost_ = reason;
  for (SshExecChannel* channel : channels_) {
    channel->on_lost(reason);
  }
}

std::string SshConnection::lost_reason() {
  std::lock_guard lock(mutex_);
  return lost_;
}

void SshConnection::declare_lost(const std::string& reason) {
  std::lock_guard lock(mutex_);
  lose_locked(reason);
}

std::shared_ptr<SshExecChannel> SshConnection::exec(const std::string& command, OutputSink* sink,
                                                    bool announces_pid,
                                                    std::chrono::milliseconds timeout) {
  std::shared_ptr<SshExecChannel> channel(
      new SshExecChannel(shared_from_this(), sink, announces_pid));
  std::chrono::milliseconds limit = timeout.count() > 0 ? timeout : options_.alive_timeout;
  {
    std::lock_guard lock(mutex_);
    if (!lost_.empty()) {
      throw SshError(lost_);
    }
    set_timeout(session_, limit);
    auto started = Clock::now();
    auto fail = [&](const char* what) { return failure_locked(what, started, limit); };
    ssh_channel raw = ssh_channel_new(session_);
    if (raw == nullptr) {
      throw fail("cannot create a channel");
    }
    channel->attach_callbacks(raw);
    if (ssh_channel_open_session(raw) != SSH_OK) {
      SshError error = fail("cannot open a channel (the server may limit sessions: MaxSessions)");
      ssh_remove_channel_callbacks(raw, &channel->callbacks_);
      ssh_channel_free(raw);
      throw error;
    }
    channel->channel_ = raw;
    channels_.push_back(channel.get());
    if (ssh_channel_request_exec(raw, command.c_str()) != SSH_OK) {
      SshError error = fail("cannot start the command");
      channels_.pop_back();
      ssh_remove_channel_callbacks(raw, &channel->callbacks_);
      ssh_channel_free(raw);
      channel->channel_ = nullptr;
      throw error;
    }
    set_timeout(session_, options_.alive_timeout);
  }
  wake();
  return channel;
}

SshError SshConnection::failure_locked(const char* what, Clock::time_point started,
                                       std::chrono::milliseconds limit) {
  std::string error = ssh_get_error(session_);
  bool no_answer = Clock::now() - started >= limit - std::chrono::milliseconds(20);
  set_timeout(session_, options_.alive_timeout);
  if (no_answer) {
    lose_locked(fmt::format("{}: the host did not answer within {}", who(), seconds_text(limit)));
    return SshError(lost_);
  }
  if ((ssh_get_status(session_) & (SSH_CLOSED | SSH_CLOSED_ERROR)) != 0) {
    lose_locked(fmt::format("{}: connection lost: {}", who(), error));
    return SshError(lost_);
  }
  return SshError(fmt::format("{}: {}: {}", who(), what, error));
}

void SshConnection::ping(std::chrono::milliseconds limit) {
  std::lock_guard lock(mutex_);
  if (!lost_.empty()) {
    throw SshError(lost_);
  }
  set_timeout(session_, limit);
  auto started = Clock::now();
  ssh_channel raw = ssh_channel_new(session_);
  if (raw == nullptr) {
    throw failure_locked("cannot create a channel", started, limit);
  }
  // Opening a session channel is answered by sshd itself: a round trip that starts no process
  // on the host, so probing during a measurement does not disturb it.
  int rc = ssh_channel_open_session(raw);
  if (rc != SSH_OK) {
    SshError error = failure_locked("cannot open a channel", started, limit);
    ssh_channel_free(raw);
    throw error;
  }
  ssh_channel_close(raw);
  ssh_channel_free(raw);
  set_timeout(session_, options_.alive_timeout);
}

void SshConnection::write(SshExecChannel& channel, std::string_view data, bool last) {
  {
    std::lock_guard lock(mutex_);
    if (!lost_.empty()) {
      throw SshError(lost_);
    }
    if (channel.channel_ == nullptr) {
      throw SshError(who() + ": the command's channel is closed");
    }
    while (!data.empty()) {
      auto chunk = static_cast<uint32_t>(std::min<std::size_t>(data.size(), 65536));
      int written = ssh_channel_write(channel.channel_, data.data(), chunk);
      if (written == SSH_ERROR) {
        throw SshError(
            fmt::format("{}: cannot write to the command: {}", who(), ssh_get_error(session_)));
      }
      data.remove_prefix(static_cast<std::size_t>(written));
    }
    if (last && ssh_channel_send_eof(channel.channel_) == SSH_ERROR) {
      throw SshError(
          fmt::format("{}: cannot end the command's input: {}", who(), ssh_get_error(session_)));
    }
  }
  wake();
}

void SshConnection::release(SshExecChannel& channel) {
  std::lock_guard lock(mutex_);
  channels_.erase(std::remove(channels_.begin(), channels_.end(), &channel), channels_.end());
  if (channel.channel_ == nullptr) {
    return;
  }
  ssh_remove_channel_callbacks(channel.channel_, &channel.callbacks_);
  if (lost_.empty()) {
    // Our side of the close: the server keeps a channel (counted against MaxSessions) until both
    // sides closed it.
    ssh_channel_close(channel.channel_);
  }
  ssh_channel_free(channel.channel_);
  channel.channel_ = nullptr;
}

}  // namespace ernic
