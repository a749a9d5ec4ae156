#include "perf/oob_channel.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

namespace ernic::emu::perf {

OobChannel OobChannel::listen(const std::string& bind, std::uint16_t port, Waiter waiter) {
  OobChannel c(std::move(waiter));
  c.listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(c.listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (inet_pton(AF_INET, bind.c_str(), &addr.sin_addr) != 1 ||
      ::bind(c.listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(c.listen_fd_, 1) != 0) {
    throw std::runtime_error(
        fmt::format("Couldn't listen to port {}: {}", port, std::strerror(errno)));
  }
  return c;
}

bool OobChannel::readable(int fd, std::chrono::seconds timeout) {
  return waiter_(fd, std::chrono::steady_clock::now() + timeout);
}

void OobChannel::accept(std::chrono::seconds timeout) {
  if (!readable(listen_fd_, timeout)) {
    throw std::runtime_error("No client connected within " + std::to_string(timeout.count()) +
                             " s");
  }
  fd_ = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd_ < 0) {
    throw std::runtime_error(std::string("accept failed: ") + std::strerror(errno));
  }
  close(listen_fd_);
  listen_fd_ = -1;
  int one = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

OobChannel OobChannel::connect(const std::string& host, std::uint16_t port, Waiter waiter) {
  OobChannel c(std::move(waiter));
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* result = nullptr;
  const std::string service = std::to_string(port);
  if (getaddrinfo(host.c_str(), service.c_str(), &hints, &result) != 0 || result == nullptr) {
    throw std::runtime_error(
        fmt::format("Couldn't connect to {}:{}\nUnable to open file descriptor "
                    "for socket connection Unable to init the socket connection",
                    host, port));
  }
  // A server that was just started may not listen yet: retry briefly, like a patient client.
  for (int attempt = 0; attempt < 20; ++attempt) {
    c.fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (::connect(c.fd_, result->ai_addr, result->ai_addrlen) == 0) {
      freeaddrinfo(result);
      int one = 1;
      setsockopt(c.fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      return c;
    }
    close(c.fd_);
    c.fd_ = -1;
    usleep(50000);
  }
  freeaddrinfo(result);
  throw std::runtime_error(
      fmt::format("Couldn't connect to {}:{}\nUnable to open file descriptor "
                  "for socket connection Unable to init the socket connection",
                  host, port));
}

OobChannel::OobChannel(OobChannel&& o) noexcept
    : listen_fd_(o.listen_fd_),
      fd_(o.fd_),
      buffer_(std::move(o.buffer_)),
      waiter_(std::move(o.waiter_)) {
  o.listen_fd_ = -1;
  o.fd_ = -1;
}

OobChannel::~OobChannel() {
  if (fd_ >= 0) {
    close(fd_);
  }
  if (listen_fd_ >= 0) {
    close(listen_fd_);
  }
}

void OobChannel::send_line(const std::string& line) {
  const std::string data = line + "\n";
  std::size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = ::send(fd_, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) {
        continue;
      }
      throw std::runtime_error("Failed to exchange data between server and clients");
    }
    sent += static_cast<std::size_t>(n);
  }
}

std::optional<std::string> OobChannel::take_line() {
  const auto newline = buffer_.find('\n');
  if (newline == std::string::npos) {
    return std::nullopt;
  }
  std::string line = buffer_.substr(0, newline);
  buffer_.erase(0, newline + 1);
  return line;
}

void OobChannel::read_some() {
  while (true) {
    char chunk[4096];
    const ssize_t got = ::recv(fd_, chunk, sizeof chunk, 0);
    if (got <= 0) {
      if (got < 0 && errno == EINTR) {
        continue;
      }
      throw std::runtime_error("Failed to exchange data between server and clients (peer closed)");
    }
    buffer_.append(chunk, static_cast<std::size_t>(got));
    if (buffer_.size() > (1u << 20)) {
      throw std::runtime_error("out-of-band peer sent an overlong line");
    }
    return;
  }
}

std::string OobChannel::receive_line(std::chrono::seconds timeout) {
  while (true) {
    if (auto line = take_line()) {
      return *line;
    }
    if (!readable(fd_, timeout)) {
      throw std::runtime_error("Timed out waiting for the peer over the out-of-band connection");
    }
    read_some();
  }
}

std::optional<std::string> OobChannel::try_receive_line() {
  while (true) {
    if (auto line = take_line()) {
      return line;
    }
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, 0) <= 0) {
      return std::nullopt;
    }
    read_some();
  }
}

}  // namespace ernic::emu::perf
