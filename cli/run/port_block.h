#pragma once

#include <cstdint>

namespace ernic {

// TCP ports for point servers that listen in this machine's own network stack (local and
// embedded hosts), where the servers of every concurrent run meet. A run holds a block of ports
// that no other ernicctl run on the machine holds at the same time, and within it takes the
// ports the kernel says are free (another program may hold one). The block is reserved by an
// abstract UNIX socket named after it: the kernel releases it when the process ends, however it
// ends, so a killed run leaves nothing behind.
class PortBlock {
 public:
  static constexpr std::uint16_t kFirstPort = 20000;
  static constexpr std::uint16_t kBlockSize = 200;
  static constexpr int kBlocks = 40;

  PortBlock() = default;
  ~PortBlock();
  PortBlock(const PortBlock&) = delete;
  PortBlock& operator=(const PortBlock&) = delete;

  // The next free port of this run's block (reserving the block on first use). Throws
  // std::runtime_error when every block is held by other runs or no port of the block is free.
  std::uint16_t take();
  // The first port of the block, 0 before the first take().
  std::uint16_t base() const { return base_; }

 private:
  void reserve();

  int reservation_fd_ = -1;
  std::uint16_t base_ = 0;
  std::uint16_t next_ = 0;
};

}  // namespace ernic
