#include "perf/endpoint.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "runtime/scheduling.h"

namespace ernic::emu::perf {
namespace {

constexpr std::uint64_t kVerifyBufferBudget = 64u << 20;  // per QP
// A waiting side that may be told to stop (duration mode) looks at the out-of-band channel this
// often.
constexpr std::chrono::milliseconds kStopSlice{100};

// How long the load generator busy-polls before it blocks. Latency tests spin (a wake-up
// costs tens of microseconds here); bandwidth tests block at once, because with a deep window
// there is always work queued and a spinning client only takes CPU from the instances (on two
// cores it halved the bandwidth). ERNIC_PERF_SPIN_US overrides both.
std::chrono::microseconds g_spin{0};

std::byte pattern(std::uint64_t seq, std::uint64_t offset, std::uint32_t qp) {
  return static_cast<std::byte>((seq * 131 + offset * 7 + qp * 29 + (offset >> 8)) & 0xff);
}

std::string status_text(std::uint8_t status) {
  if (status == shm::kLocalQpOperationError) {
    return "local QP operation error";
  }
  return to_string(static_cast<WcStatus>(status));
}

// Waits in slices until `attempt()` succeeds; false once stop() holds; throws after `timeout`
// without success.
bool wait_sliced(const std::function<bool(std::chrono::milliseconds)>& attempt, int timeout_seconds,
                 const StopRequested& stop, const std::string& timeout_message) {
  const auto timeout = std::chrono::seconds(timeout_seconds);
  if (!stop) {
    if (!attempt(std::chrono::duration_cast<std::chrono::milliseconds>(timeout))) {
      throw std::runtime_error(timeout_message);
    }
    return true;
  }
  const auto give_up = SteadyClock::now() + timeout;
  while (!attempt(kStopSlice)) {
    if (stop()) {
      return false;
    }
    if (SteadyClock::now() >= give_up) {
      throw std::runtime_error(timeout_message);
    }
  }
  return true;
}

}  // namespace

double usec_between(SteadyClock::time_point a, SteadyClock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

std::chrono::microseconds spin_window() {
  return g_spin;
}

// An ERNIC_PERF_*_US override, if set; a value that is not a whole number of microseconds
// is an error that names the variable, not a silent 0.
std::optional<std::chrono::microseconds> microseconds_from_env(const char* name) {
  const char* text = std::getenv(name);
  if (text == nullptr) {
    return std::nullopt;
  }
  long value = 0;
  const char* end = text + std::strlen(text);
  const auto [stop, error] = std::from_chars(text, end, value);
  if (error != std::errc() || stop != end || stop == text || value < 0) {
    throw std::runtime_error(
        fmt::format("{}={}: expected a whole number of microseconds", name, text));
  }
  return std::chrono::microseconds(value);
}

void choose_spin(Mode mode) {
  g_spin = microseconds_from_env("ERNIC_PERF_SPIN_US")
               .value_or(std::chrono::microseconds(mode == Mode::kLatency ? 50 : 0));
}

void choose_scheduling(Mode mode) {
  // A latency test's every iteration is a wake-up; beside bulk tenants on two cores, with the
  // kernel's slice it waited for a CPU-bound neighbour's slice to end (p99 under load 10-24 x
  // solo, about 3 x with the short one: docs/emulator-performance-log.md, "Scheduler
  // slices and system calls"). A bandwidth test always has work queued: as a batch task it never
  // preempts a waking latency test. ERNIC_PERF_SLICE_US overrides both (the slice, 0 for the
  // kernel's; the policy stays normal).
  if (const auto slice = microseconds_from_env("ERNIC_PERF_SLICE_US")) {
    request_time_slice(*slice);
  } else if (mode == Mode::kLatency) {
    request_time_slice(kLatencySlice);
  } else {
    run_as_batch();
  }
}

void fill(std::byte* p, std::uint64_t length, std::uint64_t seq, std::uint32_t qp) {
  for (std::uint64_t i = 0; i < length; ++i) {
    p[i] = pattern(seq, i, qp);
  }
}

void check(const std::byte* p, std::uint64_t length, std::uint64_t seq, std::uint32_t qp,
           const char* what) {
  for (std::uint64_t i = 0; i < length; ++i) {
    if (p[i] != pattern(seq, i, qp)) {
      throw std::runtime_error(fmt::format(
          "Data verification failed: {} of {} bytes (message {} on QP {}) differs at byte {}: "
          "got 0x{:02x}, expected 0x{:02x}",
          what, length, seq, qp, i, std::to_integer<unsigned>(p[i]),
          std::to_integer<unsigned>(pattern(seq, i, qp))));
    }
  }
}

std::uint64_t wr_id(std::uint32_t qp, std::uint64_t seq) {
  return (static_cast<std::uint64_t>(qp) << 40) | seq;
}
std::uint32_t wr_qp(std::uint64_t id) {
  return static_cast<std::uint32_t>(id >> 40);
}
std::uint64_t wr_seq(std::uint64_t id) {
  return id & ((1ull << 40) - 1);
}

BufferLayout buffer_layout(const PerfOptions& o, std::uint64_t max_size) {
  BufferLayout l;
  l.slot_size = std::max<std::uint64_t>(max_size, 64);
  if (o.mode == Mode::kLatency) {
    l.slots = 2;  // PingPong: slot 0 sends, slot 1 receives (and holds write_lat's marker)
    l.receive_depth = o.verb == Verb::kSend ? 1 : 0;
    return l;
  }
  if (o.verify) {
    // Every message in flight owns a slot, so that no later message overwrites data before it
    // is checked; the sender keeps no more in flight than there are slots.
    l.slots = static_cast<std::uint32_t>(std::clamp<std::uint64_t>(
        kVerifyBufferBudget / l.slot_size, 2, std::max<std::uint32_t>(o.tx_depth, 2)));
    l.send_depth = std::min<std::uint64_t>(o.tx_depth, l.slots);
  } else {
    // One slot that every message of the QP is sent from, received into, written to or read
    // from, as perftest's bandwidth tests do: nothing checks the data, and a second 8 MiB slot
    // only doubled the working set the kernel's copies walk through
    // (docs/emulator-performance-log.md, "One buffer slot per QP").
    l.slots = 1;
    l.send_depth = o.tx_depth;
  }
  if (server_receives(o)) {
    const std::uint64_t initial =
        o.verify ? l.slots : std::min<std::uint64_t>(1024, ShmClient::kMaxOutstanding / o.qps);
    l.receive_depth = std::min(initial, receive_budget(o));
  }
  return l;
}

Endpoint::Endpoint(Device& device, const PerfOptions& o, std::uint64_t max_size)
    : client(device), layout(buffer_layout(o, max_size)) {
  pd = client.alloc_pd();
  cq = client.create_cq();
  for (std::uint32_t i = 0; i < o.qps; ++i) {
    Qp q;
    q.memory = client.allocate(layout.bytes_per_qp());
    q.keys = client.reg_mr(pd, q.memory, 0, q.memory.size,
                           kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead);
    q.qpn = client.create_qp(pd, cq, cq);
    QpAttributes a;
    a.state = QpState::kInit;
    a.access = kAccessRemoteWrite | kAccessRemoteRead;
    client.modify_qp(q.qpn, a);
    qps.push_back(q);
  }
}

std::string Endpoint::describe() const {
  std::string out = client.gids().front();
  for (const Qp& q : qps) {
    out +=
        fmt::format(" {}:{}:{}:{}:{}", q.qpn, q.keys.rkey,
                    reinterpret_cast<std::uint64_t>(q.memory.data), layout.slots, layout.slot_size);
  }
  return out;
}

void Endpoint::connect(const std::string& description) {
  std::istringstream in(description);
  in >> remote_gid;
  std::string item;
  while (in >> item) {
    RemoteQp r;
    BufferLayout peer;
    if (std::sscanf(item.c_str(), "%u:%u:%lu:%u:%lu", &r.qpn, &r.rkey, &r.vaddr, &peer.slots,
                    &peer.slot_size) != 5) {
      throw std::runtime_error("malformed QP description from the peer (another version?): " +
                               item);
    }
    // Each side writes into and reads from the other's slots with its own layout.
    if (peer.slots != layout.slots || peer.slot_size != layout.slot_size) {
      throw std::runtime_error(fmt::format(
          "the peer cuts its buffers into {} slots of {} bytes, this side into {} of {}",
          peer.slots, peer.slot_size, layout.slots, layout.slot_size));
    }
    remote.push_back(r);
  }
  if (remote.size() != qps.size()) {
    throw std::runtime_error("the peer has a different number of QPs");
  }
  for (std::size_t i = 0; i < qps.size(); ++i) {
    QpAttributes a;
    a.state = QpState::kRtr;
    a.remote_gid = remote_gid;
    a.remote_qpn = remote[i].qpn;
    client.modify_qp(qps[i].qpn, a);
    a.state = QpState::kRts;
    a.rnr_retry = 7;
    a.rnr_delay = std::chrono::microseconds(20);
    client.modify_qp(qps[i].qpn, a);
    if (!first_rts) {
      first_rts = SteadyClock::now();
    }
  }
}

std::byte* Endpoint::slot(std::uint32_t qp, std::uint64_t index) {
  return qps[qp].memory.data + (index % layout.slots) * layout.slot_size;
}

std::uint64_t Endpoint::remote_slot(std::uint32_t qp, std::uint64_t index) const {
  return remote[qp].vaddr + (index % layout.slots) * layout.slot_size;
}

std::optional<Device::Completion> Endpoint::next(int timeout_seconds, const char* side,
                                                 const StopRequested& stop) {
  Device::Completion c;
  const auto attempt = [&](std::chrono::milliseconds within) {
    while (client.poll_cq(cq, {&c, 1}) == 0) {
      if (!client.wait(spin_window(), within)) {
        return false;
      }
    }
    return true;
  };
  if (!wait_sliced(
          attempt, timeout_seconds, stop,
          fmt::format("Timed out: no completion for {} s at the {}", timeout_seconds, side))) {
    return std::nullopt;
  }
  if (!c.ok()) {
    throw std::runtime_error(fmt::format("Completion with error at {}: {} (status {}), wr_id {}",
                                         side, status_text(c.status), c.status, c.wr_id));
  }
  return c;
}

bool Endpoint::wait_for(const std::function<bool()>& arrived, int timeout_seconds,
                        const StopRequested& stop) {
  const auto attempt = [&](std::chrono::milliseconds within) {
    return client.wait_until(arrived, spin_window(), within);
  };
  return wait_sliced(attempt, timeout_seconds, stop, "Timed out waiting for the peer's RDMA WRITE");
}

void Endpoint::post_recv_slot(std::uint32_t qp, std::uint64_t id, std::uint64_t slot_index) {
  client.post_recv(qps[qp].qpn,
                   {id,
                    {reinterpret_cast<std::uint64_t>(slot(qp, slot_index)),
                     static_cast<std::uint32_t>(layout.slot_size), qps[qp].keys.lkey}});
}

bool server_receives(const PerfOptions& o) {
  return o.mode == Mode::kBandwidth &&
         (o.verb == Verb::kSend || (o.verb == Verb::kWrite && o.verify));
}

std::uint64_t receive_budget(const PerfOptions& o) {
  return o.duration_seconds > 0 ? std::numeric_limits<std::uint64_t>::max() : o.iterations;
}

void post_message(Endpoint& e, const PerfOptions& o, std::uint32_t q, std::uint64_t seq,
                  std::uint64_t size) {
  std::byte* local = e.slot(q, seq);
  SendWr wr;
  wr.wr_id = wr_id(q, seq);
  wr.sge = {reinterpret_cast<std::uint64_t>(local), static_cast<std::uint32_t>(size),
            e.qps[q].keys.lkey};
  wr.remote_addr = e.remote_slot(q, seq);
  wr.rkey = e.remote[q].rkey;
  wr.imm = static_cast<std::uint32_t>(seq);
  if (o.verb == Verb::kSend) {
    wr.opcode = SendOpcode::kSend;
  } else if (o.verb == Verb::kWrite) {
    wr.opcode = o.verify ? SendOpcode::kRdmaWriteWithImm : SendOpcode::kRdmaWrite;
  } else {
    wr.opcode = SendOpcode::kRdmaRead;
  }
  if (o.verify) {
    if (o.verb == Verb::kRead) {
      std::memset(local, 0xee, size);
    } else {
      fill(local, size, seq, q);
    }
  }
  e.client.post_send(e.qps[q].qpn, wr);
}

void take_receive(Endpoint& e, const PerfOptions& o, std::uint64_t size,
                  const Device::Completion& c, std::vector<std::uint64_t>& next_recv) {
  const std::uint32_t q = wr_qp(c.wr_id);
  const std::uint64_t seq = wr_seq(c.wr_id);
  if (c.byte_len != size) {
    throw std::runtime_error(
        fmt::format("Data verification failed: received {} bytes, expected {}", c.byte_len, size));
  }
  if (o.verify) {
    // A WRITE with immediate lands in the slot its sequence number names (modulo 2^32).
    const std::uint64_t data_seq = o.verb == Verb::kWrite ? c.imm : seq;
    check(e.slot(q, data_seq), size, data_seq, q,
          o.verb == Verb::kWrite ? "RDMA WRITE data" : "SEND data");
  }
  if (next_recv[q] < receive_budget(o)) {
    const std::uint64_t n = next_recv[q]++;
    e.post_recv_slot(q, wr_id(q, n), n);
  }
}

PingPong::PingPong(Endpoint& e, const PerfOptions& o, std::uint64_t size, bool client)
    : e_(e), o_(o), size_(size), client_(client), out_(e.slot(0, 0)), in_(e.slot(0, 1)) {
  if (o.verb == Verb::kWrite) {
    e.client.watch_writes(in_ + size - 1, 1);  // the marker byte
  }
}

namespace {

std::byte marker_for(std::uint64_t i) {
  return static_cast<std::byte>(i % 255 + 1);
}

}  // namespace

void PingPong::post(SendOpcode op, std::uint64_t id, std::uint64_t remote_addr) {
  SendWr wr;
  wr.wr_id = id;
  wr.opcode = op;
  wr.sge = {reinterpret_cast<std::uint64_t>(out_), static_cast<std::uint32_t>(size_),
            e_.qps[0].keys.lkey};
  wr.remote_addr = remote_addr;
  wr.rkey = e_.remote[0].rkey;
  e_.client.post_send(e_.qps[0].qpn, wr);
}

std::optional<double> PingPong::exchange(std::uint64_t i, const StopRequested& stop) {
  const auto t0 = SteadyClock::now();
  if (o_.verb == Verb::kRead) {
    if (o_.verify) {
      std::memset(out_, 0xee, size_);
    }
    post(SendOpcode::kRdmaRead, i, e_.remote_slot(0, 0));
    if (!e_.next(o_.timeout_seconds, "client", stop)) {
      return std::nullopt;
    }
    if (o_.verify) {
      check(out_, size_, 0, 0, "READ data");
    }
    return usec_between(t0, SteadyClock::now());
  }
  if (client_) {
    transmit(i);
    if (!receive(i, stop)) {
      return std::nullopt;
    }
  } else {
    if (!receive(i, stop)) {
      return std::nullopt;
    }
    transmit(i);
  }
  return usec_between(t0, SteadyClock::now()) / 2;  // one way, as perftest
}

bool PingPong::receive(std::uint64_t i, const StopRequested& stop) {
  const char* side = client_ ? "client" : "server";
  if (o_.verb == Verb::kSend) {
    while (true) {
      const auto c = e_.next(o_.timeout_seconds, side, stop);
      if (!c) {
        return false;
      }
      // Our own SEND completions are skipped here (draining them elsewhere could swallow the
      // next receive).
      if (c->opcode == static_cast<std::uint8_t>(WcOpcode::kRecv)) {
        e_.post_recv_slot(0, 1000000 + i + 1, 1);
        break;
      }
    }
  } else {
    // As perftest's write_lat: the completion of our own WRITE first, then the peer's. Waiting
    // for both at once (the marker alone, the completion drained later) gave the wait one spin
    // window for the whole round trip where send_lat gets a fresh one after its own SEND
    // completes: the load generator blocked on every iteration and was woken 18,000 times in
    // 20,000 (send_lat: 1,000), write_lat 4 KiB 1.3-1.6 x send_lat
    // (docs/emulator-performance-log.md, "write_lat's wait").
    if (write_outstanding_) {
      if (!e_.next(o_.timeout_seconds, side, stop)) {
        return false;
      }
      write_outstanding_ = false;
    }
    // The byte of registered memory the peer's RDMA WRITE sets, as perftest's write_lat polls
    // it. The byte is watched (Device::watch_writes), so after the spin window the client
    // blocks and the instance wakes it when the WRITE lands, exactly as for a completion.
    std::byte* p = in_ + size_ - 1;
    const std::byte marker = marker_for(i);
    const auto arrived = [p, marker] {
      return std::atomic_ref<std::byte>(*p).load(std::memory_order_acquire) == marker;
    };
    if (!e_.wait_for(arrived, o_.timeout_seconds, stop)) {
      return false;
    }
  }
  if (o_.verify) {
    check(in_, o_.verb == Verb::kWrite ? size_ - 1 : size_, i, 0, "ping-pong data");
  }
  return true;
}

void PingPong::transmit(std::uint64_t i) {
  if (o_.verify) {
    fill(out_, size_, i, 0);
  }
  if (o_.verb == Verb::kWrite) {
    out_[size_ - 1] = marker_for(i);
    post(SendOpcode::kRdmaWrite, i, e_.remote_slot(0, 1));
    write_outstanding_ = true;
  } else {
    post(SendOpcode::kSend, i, 0);
  }
}

}  // namespace ernic::emu::perf
