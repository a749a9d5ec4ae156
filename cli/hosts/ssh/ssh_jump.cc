#include "hosts/ssh/ssh_jump.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <optional>
#include <stdexcept>

namespace ernic {

std::string jump_host_name(const SshEndpoint& jump) {
  return "jump host " + jump.display();
}

SshEndpoint parse_ssh_destination(std::string_view text) {
  auto fail = [whole = std::string(text)] {
    return std::runtime_error(fmt::format(
        "'{}' is not an SSH destination such as root@10.1.2.1 or admin@gw:2222", whole));
  };
  SshEndpoint endpoint;
  if (auto at = text.rfind('@'); at != std::string_view::npos) {
    endpoint.user = std::string(text.substr(0, at));
    text.remove_prefix(at + 1);
    if (endpoint.user.empty()) {
      throw fail();
    }
  }
  std::optional<std::string_view> port_text;
  if (!text.empty() && text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string_view::npos) {
      throw fail();
    }
    endpoint.host = std::string(text.substr(1, close - 1));
    std::string_view rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') {
        throw fail();
      }
      port_text = rest.substr(1);
    }
  } else if (auto colon = text.find(':'); colon != std::string_view::npos) {
    endpoint.host = std::string(text.substr(0, colon));
    port_text = text.substr(colon + 1);
  } else {
    endpoint.host = std::string(text);
  }
  if (endpoint.host.empty() || endpoint.host.find_first_of("/@ ") != std::string::npos) {
    throw fail();
  }
  if (port_text) {
    unsigned port = 0;
    const char* first = port_text->data();
    const char* last = first + port_text->size();
    auto [end, error] = std::from_chars(first, last, port);
    if (error != std::errc() || end != last || port == 0 || port > 65535) {
      throw fail();
    }
    endpoint.port = static_cast<std::uint16_t>(port);
  }
  return endpoint;
}

std::unique_ptr<SshTunnel> SshTunnel::open(const SshConnectOptions& options,
                                           const std::string& host, std::uint16_t port,
                                           const std::string& who) {
  if (!options.jump) {
    throw std::logic_error("SshTunnel::open without a jump host");
  }
  std::unique_ptr<SshTunnel> tunnel(new SshTunnel());
  tunnel->jump_name_ = jump_host_name(*options.jump);
  tunnel->destination_ = fmt::format("{}:{}", host, port);
  std::string jump_who = who + ": " + tunnel->jump_name_;
  // The jump's own key is verified like any host's, against its own known_hosts when given.
  SshConnectOptions hop = options;
  if (!options.jump_known_hosts.empty()) {
    hop.known_hosts = options.jump_known_hosts;
  }
  tunnel->jump_ = ssh_login::connect_hop(*options.jump, hop, jump_who, -1);
  ssh_session jump = tunnel->jump_.get();
  ssh_login::enable_tcp_keepalive(ssh_get_fd(jump), options.keepalive);
  tunnel->channel_ = ssh_channel_new(jump);
  if (tunnel->channel_ == nullptr ||
      ssh_channel_open_forward(tunnel->channel_, host.c_str(), port, "127.0.0.1", 0) != SSH_OK) {
    throw SshError(fmt::format("{}: {} cannot reach {}: {}", who, tunnel->jump_name_,
                               tunnel->destination_, ssh_get_error(jump)));
  }
  // The pump's writes to a jump that stopped answering end within alive_timeout, as every
  // exchange on the target's session does.
  ssh_login::set_timeout(jump, options.alive_timeout);
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
    throw SshError(fmt::format("{}: cannot create a socket pair: {}", who, std::strerror(errno)));
  }
  tunnel->pump_fd_ = pair[0];
  tunnel->released_fd_ = pair[1];
  tunnel->pump_thread_ = std::thread([raw = tunnel.get()] { raw->pump(); });
  return tunnel;
}

SshTunnel::~SshTunnel() {
  stop_ = true;
  if (pump_thread_.joinable()) {
    pump_thread_.join();
  }
  if (channel_ != nullptr) {
    ssh_channel_close(channel_);
    ssh_channel_free(channel_);
  }
  for (int fd : {pump_fd_, released_fd_}) {
    if (fd >= 0) {
      close(fd);
    }
  }
}

int SshTunnel::release_fd() {
  int fd = released_fd_;
  released_fd_ = -1;
  return fd;
}

std::string SshTunnel::failure() {
  std::lock_guard lock(mutex_);
  return failure_;
}

void SshTunnel::end(const std::string& reason) {
  {
    std::lock_guard lock(mutex_);
    if (failure_.empty()) {
      failure_ = reason;
    }
  }
  stop_ = true;
}

// The only user of the jump session once open() returned. Poll wakes it for either side; the
// short timeout bounds how long a stop request waits.
void SshTunnel::pump() {
  char buffer[32768];
  bool local_open = true;
  ssh_session jump = jump_.get();
  while (!stop_) {
    pollfd fds[2] = {{pump_fd_, static_cast<short>(local_open ? POLLIN : 0), 0},
                     {ssh_get_fd(jump), POLLIN, 0}};
    ::poll(fds, 2, 20);
    if (local_open && (fds[0].revents & (POLLIN | POLLHUP)) != 0) {
      ssize_t count = read(pump_fd_, buffer, sizeof buffer);
      if (count > 0) {
        if (ssh_channel_write(channel_, buffer, static_cast<uint32_t>(count)) == SSH_ERROR) {
          end(fmt::format("{}: connection lost: {}", jump_name_, ssh_get_error(jump)));
          break;
        }
      } else if (count == 0 || (errno != EINTR && errno != EAGAIN)) {
        ssh_channel_send_eof(channel_);
        local_open = false;
      }
    }
    for (;;) {
      int count = ssh_channel_read_nonblocking(channel_, buffer, sizeof buffer, 0);
      if (count < 0) {
        end(fmt::format("{}: connection lost: {}", jump_name_, ssh_get_error(jump)));
      }
      if (count <= 0) {
        break;
      }
      for (int done = 0; done < count;) {
        ssize_t written = ::write(pump_fd_, buffer + done, static_cast<size_t>(count - done));
        if (written <= 0) {
          stop_ = true;  // our side closed: nothing to report
          break;
        }
        done += static_cast<int>(written);
      }
    }
    if (ssh_channel_is_eof(channel_) != 0 || ssh_channel_is_closed(channel_) != 0) {
      end(fmt::format("{} closed the tunnel to {}", jump_name_, destination_));
    }
  }
  shutdown(pump_fd_, SHUT_RDWR);
}

}  // namespace ernic
