#pragma once

// Private to the load generator: one side's verbs resources (a CQ, per QP a registered buffer
// cut into slots, the peer's QPs), the data pattern --verify checks, and the waits.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "frontend/shm_client.h"
#include "perf/load_generator.h"

namespace ernic::emu::perf {

using SteadyClock = std::chrono::steady_clock;

double usec_between(SteadyClock::time_point a, SteadyClock::time_point b);

// How long the load generator busy-polls before it blocks (see choose_spin in endpoint.cc).
void choose_spin(Mode mode);
// A short time slice for latency tests, SCHED_BATCH for bandwidth tests (runtime/scheduling.h).
void choose_scheduling(Mode mode);
std::chrono::microseconds spin_window();

// The byte pattern of message `seq` on QP `qp`; check() throws perftest's verification error.
void fill(std::byte* p, std::uint64_t length, std::uint64_t seq, std::uint32_t qp);
void check(const std::byte* p, std::uint64_t length, std::uint64_t seq, std::uint32_t qp,
           const char* what);

std::uint64_t wr_id(std::uint32_t qp, std::uint64_t seq);
std::uint32_t wr_qp(std::uint64_t id);
std::uint64_t wr_seq(std::uint64_t id);

// Asked between waits in duration mode: true ends the wait (the peer said the run is over).
using StopRequested = std::function<bool()>;

// How each QP's registered buffer is cut into message-sized slots; both sides derive it from
// the test the client announced and check the peer's in connect(), since each addresses the
// other's slots (RDMA WRITE and READ) with its own layout.
struct BufferLayout {
  std::uint64_t slot_size = 0;
  std::uint32_t slots = 0;
  // Bandwidth: messages the client keeps in flight per QP, and receives the server posts per
  // QP before the first message (its banner's RX depth).
  std::uint64_t send_depth = 0;
  std::uint64_t receive_depth = 0;
  std::uint64_t bytes_per_qp() const { return slot_size * slots; }
};
BufferLayout buffer_layout(const PerfOptions& o, std::uint64_t max_size);

struct RemoteQp {
  std::uint32_t qpn = 0;
  std::uint32_t rkey = 0;
  std::uint64_t vaddr = 0;
};

struct Endpoint {
  struct Qp {
    std::uint32_t qpn = 0;
    Device::Memory memory;
    MemoryKeys keys;
  };

  Endpoint(Device& device, const PerfOptions& o, std::uint64_t max_size);

  // This side's GID and QPs for the peer, and connecting to the peer's (INIT -> RTR -> RTS).
  std::string describe() const;
  void connect(const std::string& description);

  std::byte* slot(std::uint32_t qp, std::uint64_t index);
  std::uint64_t remote_slot(std::uint32_t qp, std::uint64_t index) const;

  // Polls one completion, spinning then blocking; throws on an error completion or timeout.
  // With `stop`, waits in short slices and returns nothing once stop() holds.
  std::optional<Device::Completion> next(int timeout_seconds, const char* side,
                                         const StopRequested& stop = {});
  // Waits until `arrived()` holds (memory the peer's RDMA WRITE sets), as next() waits.
  bool wait_for(const std::function<bool()>& arrived, int timeout_seconds,
                const StopRequested& stop = {});

  void post_recv_slot(std::uint32_t qp, std::uint64_t id, std::uint64_t slot_index);

  Device& client;
  std::uint32_t pd = 0;
  std::uint32_t cq = 0;
  BufferLayout layout;
  std::vector<Qp> qps;
  std::vector<RemoteQp> remote;
  std::string remote_gid;
  // When the first QP reached RTS (rung 2 of the evaluation ladder).
  std::optional<SteadyClock::time_point> first_rts;
};

// Bandwidth messages. The server posts receives when messages consume them: SEND, and WRITE
// with immediate (used with --verify so that the server sees, and checks, every message).
bool server_receives(const PerfOptions& o);
// How many receives per QP the server posts in all: the iterations, unbounded in duration mode.
std::uint64_t receive_budget(const PerfOptions& o);
// Posts message `seq` of QP `q` (filled with its pattern under --verify).
void post_message(Endpoint& e, const PerfOptions& o, std::uint32_t q, std::uint64_t seq,
                  std::uint64_t size);
// The server's side of one arrived message: checks its length (and data), re-posts a receive.
void take_receive(Endpoint& e, const PerfOptions& o, std::uint64_t size,
                  const Device::Completion& c, std::vector<std::uint64_t>& next_recv);

// perftest's ping-pong on QP 0; slot 0 sends, slot 1 receives. READ has no passive part: only
// the client calls exchange() then.
class PingPong {
 public:
  PingPong(Endpoint& e, const PerfOptions& o, std::uint64_t size, bool client);
  // Exchange `i`: its one-way latency in usec (READ: the whole read, as perftest); nothing
  // when stop() ended the wait for the peer.
  std::optional<double> exchange(std::uint64_t i, const StopRequested& stop = {});

 private:
  bool receive(std::uint64_t i, const StopRequested& stop);
  void transmit(std::uint64_t i);
  void post(SendOpcode op, std::uint64_t id, std::uint64_t remote_addr);

  Endpoint& e_;
  const PerfOptions& o_;
  std::uint64_t size_;
  bool client_;
  std::byte* out_;
  std::byte* in_;
  bool write_outstanding_ = false;  // our last RDMA WRITE has not completed yet
};

}  // namespace ernic::emu::perf
