#include "run/port_block.h"

#include <fmt/format.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>

namespace ernic {
namespace {

// Whether nothing listens on or is bound to `port` on any address of this machine's stack.
bool port_is_free(std::uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return false;
  }
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  bool free = ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  ::close(fd);
  return free;
}

}  // namespace

PortBlock::~PortBlock() {
  if (reservation_fd_ >= 0) {
    ::close(reservation_fd_);
  }
}

void PortBlock::reserve() {
  for (int block = 0; block < kBlocks; ++block) {
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      throw std::runtime_error(fmt::format("cannot reserve ports: {}", std::strerror(errno)));
    }
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::string name = fmt::format("ernicctl-port-block-{}", block);
    // An abstract name: sun_path starts with a NUL byte and names no file.
    std::memcpy(address.sun_path + 1, name.data(), name.size());
    socklen_t length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
    if (::bind(fd, reinterpret_cast<sockaddr*>(&address), length) == 0) {
      reservation_fd_ = fd;
      base_ = static_cast<std::uint16_t>(kFirstPort + block * kBlockSize);
      next_ = base_;
      return;
    }
    ::close(fd);
  }
  throw std::runtime_error(fmt::format(
      "cannot reserve ports: all {} port blocks from {} are held by other ernicctl runs", kBlocks,
      kFirstPort));
}

std::uint16_t PortBlock::take() {
  if (reservation_fd_ < 0) {
    reserve();
  }
  for (int tried = 0; tried < kBlockSize; ++tried) {
    std::uint16_t port = next_;
    next_ = static_cast<std::uint16_t>(next_ + 1 == base_ + kBlockSize ? base_ : next_ + 1);
    if (port_is_free(port)) {
      return port;
    }
  }
  throw std::runtime_error(
      fmt::format("no free port in {}-{} (this run's block)", base_, base_ + kBlockSize - 1));
}

}  // namespace ernic
