#include "hosts/ssh/ssh_connection.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "hosts/ssh/ssh_jump.h"
#include "hosts/ssh/ssh_login.h"

namespace ernic {
namespace {

using ssh_login::seconds_text;
using ssh_login::SessionDeleter;
using ssh_login::SessionPtr;
using ssh_login::set_timeout;

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

SshConnection::SshConnection(SshConnectOptions options) : options_(std::move(options)) {}

std::string SshConnection::who() const {
  std::string text = fmt::format("ssh to {} ({}", options_.label, options_.target.display());
  if (options_.jump) {
    text += " via " + jump_host_name(*options_.jump);
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
    tunnel_ = SshTunnel::open(options_, options_.target.host, options_.target.port, who());
    transport_fd = tunnel_->release_fd();
  }
  SessionPtr session = ssh_login::connect_hop(options_.target, options_, who(), transport_fd);
  if (!options_.jump) {
    ssh_login::enable_tcp_keepalive(ssh_get_fd(session.get()), options_.keepalive);
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
  // Through a jump host the tunnel knows more than the target's "connection lost".
  if (std::string jump_failure = tunnel_ ? tunnel_->failure() : std::string();
      !jump_failure.empty()) {
    lost_ += " (" + jump_failure + ")";
  }
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
