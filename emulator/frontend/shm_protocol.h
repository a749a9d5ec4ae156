#pragma once

#include <sched.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

// The shared-memory front end: how a separate process uses an instance the way a guest uses a
// NIC. Control operations (memory, PD, MR, CQ, QP) go over a UNIX SOCK_SEQPACKET socket, file
// descriptors over SCM_RIGHTS; work requests and completions go through rings in a memfd the
// instance creates, with eventfd doorbells and completion notifications that are only rung
// when the other side said it is about to block.
namespace ernic::emu::shm {

inline constexpr std::uint32_t kProtocolVersion = 5;
inline constexpr std::uint32_t kSubmitSlots = 4096;
inline constexpr std::uint32_t kCompletionSlots = 8192;

// kArmCq (qpn: the CQ, wr_id: how many of its completions the client has taken) asks for one
// event on the CQ's completion channel at its next completion (ibv_req_notify_cq); at once when
// the CQ holds completions the client has not taken yet, as a NIC compares its CQ's indexes.
// kTaken: a receive the instance took out of the ring early (ShmFrontEnd::take_receives).
enum class SubmitKind : std::uint8_t { kTaken = 0, kSend = 1, kRecv = 2, kNop = 3, kArmCq = 4 };

struct SubmitEntry {
  std::uint64_t wr_id;
  std::uint64_t addr;
  std::uint64_t remote_addr;
  std::uint32_t qpn;  // kNop: the CQ that receives the completion
  std::uint32_t length;
  std::uint32_t lkey;
  std::uint32_t rkey;
  std::uint32_t imm;
  std::uint8_t kind;
  std::uint8_t opcode;  // SendOpcode
  std::uint8_t signaled;
  std::uint8_t reserved;
};

struct CompletionEntry {
  std::uint64_t wr_id;
  std::uint32_t qpn;
  std::uint32_t cq;
  std::uint32_t byte_len;
  std::uint32_t imm;
  std::uint8_t status;  // WcStatus, or kLocalQpOperationError
  std::uint8_t opcode;  // WcOpcode; 0xff for a NOP
  std::uint8_t has_imm;
  std::uint8_t reserved[5];
  // When the instance completed it (CLOCK_MONOTONIC, ns; steady_clock on both sides): a
  // client that was descheduled meanwhile still learns when the work was done.
  std::uint64_t completed_ns;
};

// A work request the instance could not even start (unknown QP, QP not ready).
inline constexpr std::uint8_t kLocalQpOperationError = 0xfe;
inline constexpr std::uint8_t kNopOpcode = 0xff;

struct alignas(64) Index {
  std::atomic<std::uint32_t> value;
};
static_assert(std::atomic<std::uint32_t>::is_always_lock_free);

// Memory a client waits on for an RDMA WRITE to land (perftest's write_lat polls the last byte
// of its buffer). After placing a WRITE segment that overlaps [begin, end) (client addresses,
// as work requests use them) the instance treats it like a completion: it rings the completion
// eventfd when the client set client_waiting. begin == end watches nothing.
struct alignas(64) WriteWatch {
  std::atomic<std::uint64_t> begin;
  std::atomic<std::uint64_t> end;
};
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);

// Where the client's program runs: the CPU it last polled on, plus one (0: not known), and a
// count it moves on while it polls, so the instance tells a program spinning now from one that
// stopped. The instance's loop keeps off that CPU while the count moves (runtime/
// cpu_placement.h). Never set through a guest region: a guest's CPUs are not the host's.
struct alignas(64) ClientPresence {
  std::atomic<std::uint32_t> cpu;
  std::atomic<std::uint32_t> activity;

  // Called as the program polls: a store every `kEvery` calls, none when nothing changed.
  void note(std::uint32_t& calls) {
    static constexpr std::uint32_t kEvery = 16;
    if (++calls % kEvery != 0) {
      return;
    }
    // No system call: glibc reads the rseq area the kernel keeps current.
    const auto published = static_cast<std::uint32_t>(sched_getcpu() + 1);
    if (cpu.load(std::memory_order_relaxed) != published) {
      cpu.store(published, std::memory_order_relaxed);
    }
    activity.store(calls, std::memory_order_relaxed);
  }
};

struct Area {
  Index submit_head;       // instance consumes
  Index submit_tail;       // client produces
  Index completion_head;   // client consumes
  Index completion_tail;   // instance produces
  Index instance_waiting;  // set by the instance before it blocks: ring the doorbell
  Index client_waiting;    // set by the client before it blocks: notify completions
  WriteWatch write_watch;  // set by the client: placed WRITEs there count as completions
  // The CPU the instance's event loop last ran on, plus one (0: not yet known). A client that
  // shares it does not spin (ShmClient::wait_until).
  Index instance_cpu;
  ClientPresence client;
  SubmitEntry submits[kSubmitSlots];
  CompletionEntry completions[kCompletionSlots];
};

enum class Op : std::uint32_t {
  kOpen = 1,
  kRegisterMemory = 2,
  kAllocPd = 3,
  kRegisterMr = 4,
  kDeregisterMr = 5,
  kCreateCq = 6,
  kCreateQp = 7,
  kModifyQp = 8,
  kDestroyQp = 9,
  kReleaseMemory = 10,
  kDeallocPd = 11,
  kDestroyCq = 12,
};

// What one instance holds at most, over all its clients: the device's limits, which
// ibv_query_device reports and the instance enforces (ENOMEM beyond them, as a NIC's firmware
// refuses a resource it has no room for).
struct DeviceLimits {
  std::uint32_t max_pd = 1024;
  std::uint32_t max_cq = 4096;
  std::uint32_t max_qp = 1024;
  std::uint32_t max_mr = 16384;
  std::uint64_t max_mr_size = std::uint64_t{1} << 40;
};
inline constexpr DeviceLimits kDeviceLimits{};

// A control answer starts with a status: 0, or the errno the verbs call returns.

inline constexpr std::size_t kMaxControlMessage = 64u << 10;

}  // namespace ernic::emu::shm
