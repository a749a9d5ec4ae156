#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/verbs.h"

namespace ernic::emu {

// What a consumer of verbs (the load generator) holds of a device: libibverbs' part of what a
// guest holds. ShmClient reaches an instance in another process; InLoopDevice is an instance
// in the caller's own process whose event loop runs inside the caller's waits. Not
// thread-safe; one per thread.
class Device {
 public:
  struct Memory {
    std::byte* data = nullptr;
    std::size_t size = 0;
    std::uint32_t region = 0;
  };
  struct Completion {
    std::uint64_t wr_id = 0;
    std::uint32_t qpn = 0;
    std::uint32_t byte_len = 0;
    std::uint32_t imm = 0;
    std::uint8_t status = 0;  // WcStatus or shm::kLocalQpOperationError
    std::uint8_t opcode = 0;
    bool has_imm = false;
    std::chrono::steady_clock::time_point completed_at;  // when the instance completed it
    bool ok() const { return status == 0; }
  };
  virtual ~Device() = default;

  virtual const std::vector<std::string>& gids() const = 0;
  // The process whose CPU use is the instance's; 0 when the instance is this process.
  virtual pid_t instance_pid() const = 0;

  // Memory work requests address as it is (its host address is its I/O address).
  virtual Memory allocate(std::size_t size) = 0;
  virtual std::uint32_t alloc_pd() = 0;
  virtual MemoryKeys reg_mr(std::uint32_t pd, const Memory& memory, std::size_t offset,
                            std::size_t length, std::uint32_t access) = 0;
  virtual std::uint32_t create_cq() = 0;
  virtual std::uint32_t create_qp(std::uint32_t pd, std::uint32_t send_cq,
                                  std::uint32_t recv_cq) = 0;
  virtual void modify_qp(std::uint32_t qpn, const QpAttributes& attributes) = 0;

  virtual void post_send(std::uint32_t qpn, const SendWr& wr) = 0;
  virtual void post_recv(std::uint32_t qpn, const RecvWr& wr) = 0;
  virtual std::size_t poll_cq(std::uint32_t cq, std::span<Completion> out) = 0;
  // Waits for any completion: spins for `spin`, then blocks. Returns false on timeout; throws
  // when the instance went away.
  virtual bool wait(std::chrono::microseconds spin, std::chrono::milliseconds timeout) = 0;
  // Asks to be woken when an RDMA WRITE lands in [data, data + size) (memory allocate() gave);
  // size 0 stops watching.
  virtual void watch_writes(const std::byte* data, std::size_t size) = 0;
  // Waits until `ready()` holds, as wait() does; `ready` may read watched memory.
  virtual bool wait_until(const std::function<bool()>& ready, std::chrono::microseconds spin,
                          std::chrono::milliseconds timeout) = 0;
  // Waits until `fd` is readable (the out-of-band channel) and returns true, or false at
  // `deadline`; an in-loop device keeps its instance running meanwhile.
  virtual bool wait_readable(int fd, std::chrono::steady_clock::time_point deadline);
};

}  // namespace ernic::emu
