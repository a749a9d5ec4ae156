#include "run/port_block.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <memory>

namespace ernic {
namespace {

// Holds `port` on every address, as another program would; -1 when something else already
// does (the machine is shared: other jobs listen in the same range).
int try_hold(std::uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      ::listen(fd, 1) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

TEST_CASE("port blocks: concurrent holders never share a block", "[ports]") {
  PortBlock first;
  auto second = std::make_unique<PortBlock>();
  std::uint16_t a = first.take();
  std::uint16_t b = second->take();
  CHECK(first.base() != second->base());
  CHECK(a >= first.base());
  CHECK(a < first.base() + PortBlock::kBlockSize);
  CHECK(b >= second->base());
  CHECK(b < second->base() + PortBlock::kBlockSize);
  // A block is free again the moment its holder is gone (the kernel drops the reservation).
  std::uint16_t released = second->base();
  second.reset();
  PortBlock again;
  again.take();
  CHECK(again.base() == released);
}

TEST_CASE("port blocks: a port another program holds is skipped", "[ports]") {
  PortBlock block;
  std::uint16_t first = block.take();
  // The first port after it that nobody holds yet: held now, so the block must pass over it.
  std::uint16_t held_port = first;
  int held = -1;
  while (held < 0 && held_port < block.base() + PortBlock::kBlockSize - 2) {
    held = try_hold(++held_port);
  }
  REQUIRE(held >= 0);
  std::uint16_t next = block.take();
  ::close(held);
  CHECK(next > held_port);
  CHECK(next < block.base() + PortBlock::kBlockSize);
}

}  // namespace
}  // namespace ernic
