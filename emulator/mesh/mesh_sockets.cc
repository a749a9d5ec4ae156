// Opening the mesh's connections: the TCP listener, the local listener that peers in the same
// network namespace reach without TCP, accepting, and dialing (local first, then TCP).
//
// Why local sockets: two instances on one machine (a laptop's manager and worker, two VMs'
// device servers) moved every byte through the loopback TCP stack. A unix stream socket
// carries the same byte stream, so the framing, the handshake and the fault handling are the
// same code, at 2-3 times TCP's throughput for large writes on one machine
// (docs/emulator.md, "Local sockets" under "The TCP mesh").

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <stdexcept>
#include <string>

#include "mesh/mesh_connection.h"

namespace ernic::emu {
namespace {

using mesh_detail::errno_text;

bool parse_ipv4(const std::string& host, sockaddr_in& addr) {
  addr = {};
  addr.sin_family = AF_INET;
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) == 1) {
    return true;
  }
  addrinfo hints{};
  hints.ai_family = AF_INET;
  addrinfo* result = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &result) != 0 || result == nullptr) {
    return false;
  }
  addr.sin_addr = reinterpret_cast<sockaddr_in*>(result->ai_addr)->sin_addr;
  freeaddrinfo(result);
  return true;
}

// The local listener's name in the abstract namespace, which is the network namespace's own:
// the TCP address it mirrors names it. A process can hold this name only if it also holds
// that TCP address (the TCP bind comes first), so the process a dialer reaches through the
// name is the one TCP would reach, and a peer in another namespace or on another machine has
// no name here and is dialed over TCP. The handshake still checks which node answered.
socklen_t local_address(const std::string& host, std::uint16_t port, sockaddr_un& addr) {
  addr = {};
  addr.sun_family = AF_UNIX;
  const std::string name = fmt::format("ernic-mesh/{}:{}", host, port);
  const std::size_t length = std::min(name.size(), sizeof addr.sun_path - 1);
  name.copy(addr.sun_path + 1, length);  // sun_path[0] == 0: abstract
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + length);
}

}  // namespace

void MeshFabric::listen() {
  sockaddr_in addr{};
  const std::uint16_t port = config_.role == MeshConfig::Role::kManager ? config_.port : 0;
  if (!parse_ipv4(config_.bind, addr)) {
    throw std::runtime_error("mesh: cannot resolve bind address " + config_.bind);
  }
  addr.sin_port = htons(port);
  listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    const std::string why = errno_text();
    close(listen_fd_);
    listen_fd_ = -1;
    throw std::runtime_error(
        fmt::format("mesh: cannot listen on {}:{}: {}", config_.bind, port, why));
  }
  ::listen(listen_fd_, 64);
  socklen_t len = sizeof addr;
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  listen_port_ = ntohs(addr.sin_port);
  loop_.add_fd(listen_fd_, EPOLLIN, [this](std::uint32_t) { accept_ready(listen_fd_, false); });
  if (config_.local_sockets) {
    listen_local();
  }
}

void MeshFabric::listen_local() {
  char host[INET_ADDRSTRLEN] = {};
  sockaddr_in bound{};
  socklen_t bound_length = sizeof bound;
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&bound), &bound_length);
  inet_ntop(AF_INET, &bound.sin_addr, host, sizeof host);
  sockaddr_un addr{};
  const socklen_t length = local_address(host, listen_port_, addr);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), length) != 0 ||
      ::listen(fd, 64) != 0) {
    // Peers here then dial TCP, as peers elsewhere always do: slower, never wrong.
    log_.warn("mesh: no local socket for {}:{} ({}): peers on this machine use TCP", host,
              listen_port_, errno_text());
    if (fd >= 0) {
      close(fd);
    }
    return;
  }
  local_listen_fd_ = fd;
  loop_.add_fd(fd, EPOLLIN, [this](std::uint32_t) { accept_ready(local_listen_fd_, true); });
}

int MeshFabric::dial_local(const std::string& host, std::uint16_t port) {
  // A peer listening on every address holds the wildcard's name.
  for (const std::string& name : {host, std::string("0.0.0.0")}) {
    sockaddr_un addr{};
    const socklen_t length = local_address(name, port, addr);
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      return -1;
    }
    // A unix connect completes at once or fails (a full backlog too: TCP then waits for us).
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), length) == 0) {
      return fd;
    }
    close(fd);
  }
  return -1;
}

void MeshFabric::accept_ready(int listen_fd, bool local) {
  while (true) {
    sockaddr_in peer{};
    socklen_t len = sizeof peer;
    const int fd =
        accept4(listen_fd, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      refusing_at_limit_ = false;
      if (local) {
        accept_connection(fd, true, "a local socket");
        continue;
      }
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      char text[INET_ADDRSTRLEN] = {};
      inet_ntop(AF_INET, &peer.sin_addr, text, sizeof text);
      accept_connection(fd, false, fmt::format("{}:{}", text, ntohs(peer.sin_port)));
      continue;
    }
    if (!DescriptorReserve::at_limit(errno)) {
      return;
    }
    if (!refusing_at_limit_) {
      refusing_at_limit_ = true;
      log_.error("mesh: out of file descriptors ({} connections open): refusing new connections",
                 connections_.size());
    }
    ++stats_.refused_peers;
    if (!reserve_.refuse_one(listen_fd)) {
      return;
    }
  }
}

void MeshFabric::dial_manager_attempt() {
  dial(config_.manager_host, config_.port, 0, true);
}

// The registration goes over TCP whatever the manager's place: the manager takes a worker's
// address from the connection when the worker listens on every address.
void MeshFabric::dial(const std::string& host, std::uint16_t port, NodeId peer, bool registering,
                      std::uint32_t lane) {
  const int local_fd = registering || !config_.local_sockets ? -1 : dial_local(host, port);
  sockaddr_in addr{};
  if (local_fd < 0 && !parse_ipv4(host, addr)) {
    const std::string why = fmt::format("cannot resolve {}", host);
    if (registering) {
      on_fatal_("mesh: " + why);
    } else {
      log_.error("mesh: {}", why);
    }
    return;
  }
  addr.sin_port = htons(port);
  const int fd =
      local_fd >= 0 ? local_fd : socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    const std::string why = fmt::format("cannot dial {}:{}: {}", host, port, errno_text());
    if (!registering) {
      log_.error("mesh: {}", why);  // the peer is unreachable, as when a connect fails
    } else if (EventLoop::Clock::now() < manager_dial_deadline_) {
      loop_.add_timer(EventLoop::Clock::now() + std::chrono::milliseconds(100),
                      [this] { dial_manager_attempt(); });
    } else {
      on_fatal_("mesh: " + why);
    }
    return;
  }
  auto conn = std::make_unique<Connection>(*this, fd, true, local_fd >= 0);
  conn->registering = registering;
  conn->peer = registering ? 0 : peer;
  conn->lane = lane;
  conn->dial_host = host;
  conn->dial_port = port;
  conn->label = fmt::format("{}:{}{}{}", host, port, conn->local ? " (local)" : "",
                            lane == 0 ? "" : fmt::format(" (lane {})", lane));
  Connection& c = *conn;
  connections_[fd] = std::move(conn);
  if (!registering && lane == 0) {
    peers_[peer] = &c;
  }
  if (!c.local) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    const int rc = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    if (rc != 0 && errno != EINPROGRESS) {
      close_connection(c, fmt::format("connect to {} failed: {}", c.label, errno_text()));
      return;
    }
  }
  loop_.add_fd(fd, EPOLLIN | EPOLLOUT, [this, &c](std::uint32_t events) {
    if (c.phase != Connection::Phase::kConnecting) {
      on_events(c, events);
      return;
    }
    int error = 0;
    socklen_t len = sizeof error;
    getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &error, &len);
    if (error != 0) {
      errno = error;
      close_connection(c, fmt::format("connect to {} failed: {}", c.label, errno_text()));
    } else if (events & EPOLLOUT) {
      on_connected(c);
    }
  });
}

void MeshFabric::on_events(Connection& c, std::uint32_t events) {
  if (c.copy_token != 0 && (events & (EPOLLHUP | EPOLLERR))) {
    // Reported whatever the interest: finish the copy here, then read to the end of stream.
    end_copy_elsewhere(c, true);
  }
  if (events & EPOLLOUT) {
    write_some(c);
  }
  if (c.phase != Connection::Phase::kClosed && (events & (EPOLLIN | EPOLLHUP | EPOLLERR))) {
    if (c.ring_in) {
      receive_markers(c);  // the stream is in the ring: the socket has descriptors, or its end
    }
    on_readable(c);
  }
}

}  // namespace ernic::emu
