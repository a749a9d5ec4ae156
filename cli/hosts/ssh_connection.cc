#include "hosts/ssh_connection.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstring>

#include "hosts/ssh_login.h"

namespace ernic {
namespace {

using ssh_login::seconds_text;
using ssh_login::SessionDeleter;
using ssh_login::SessionPtr;
using ssh_login::set_timeout;

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

}  // namespace

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
    tunnel_->jump = ssh_login::connect_hop(*options_.jump, options_, jump_who, -1);
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
  SessionPtr session = ssh_login::connect_hop(options_.target, options_, who(), transport_fd);
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
