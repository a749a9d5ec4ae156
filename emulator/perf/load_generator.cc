#include "perf/load_generator.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <ostream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "frontend/shm_client.h"
#include "perf/cpu_usage.h"
#include "perf/load_generator_output.h"
#include "perf/oob_channel.h"

namespace ernic::emu::perf {
namespace {

using SteadyClock = std::chrono::steady_clock;
constexpr std::uint64_t kBufferBudget = 2u << 20;         // per QP
constexpr std::uint64_t kVerifyBufferBudget = 64u << 20;  // per QP
// How long the load generator busy-polls before it blocks. Latency tests spin (a wake-up
// costs tens of microseconds here); bandwidth tests block at once, because with a deep window
// there is always work queued and a spinning client only takes CPU from the instances (on two
// cores it halved the bandwidth). ERNIC_PERF_SPIN_US overrides both.
std::chrono::microseconds g_spin{0};
std::chrono::microseconds spin_window() {
  return g_spin;
}
void choose_spin(Mode mode) {
  const char* env = std::getenv("ERNIC_PERF_SPIN_US");
  g_spin = std::chrono::microseconds(env != nullptr ? std::atol(env)
                                                    : (mode == Mode::kLatency ? 50 : 0));
}

double usec_between(SteadyClock::time_point a, SteadyClock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

std::byte pattern(std::uint64_t seq, std::uint64_t offset, std::uint32_t qp) {
  return static_cast<std::byte>((seq * 131 + offset * 7 + qp * 29 + (offset >> 8)) & 0xff);
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

std::string status_text(std::uint8_t status) {
  if (status == shm::kLocalQpOperationError) {
    return "local QP operation error";
  }
  return to_string(static_cast<WcStatus>(status));
}

struct RemoteQp {
  std::uint32_t qpn = 0;
  std::uint32_t rkey = 0;
  std::uint64_t vaddr = 0;
};

// One side's resources: a CQ, and per QP a registered buffer cut into slots.
struct Endpoint {
  struct Qp {
    std::uint32_t qpn = 0;
    ShmClient::Memory memory;
    MemoryKeys keys;
  };

  Endpoint(ShmClient& device, const PerfOptions& o, std::uint64_t max_size) : client(device) {
    slot_size = std::max<std::uint64_t>(max_size, 64);
    // Without --verify messages may share buffers (perftest uses one): a small working set
    // stays in the CPU caches, as iperf3's does. With it, every message in flight owns a slot.
    const std::uint64_t budget = o.verify ? kVerifyBufferBudget : kBufferBudget;
    slots = static_cast<std::uint32_t>(
        std::clamp<std::uint64_t>(budget / slot_size, 2, std::max<std::uint32_t>(o.tx_depth, 2)));
    pd = client.alloc_pd();
    cq = client.create_cq();
    for (std::uint32_t i = 0; i < o.qps; ++i) {
      Qp q;
      q.memory = client.allocate(slots * slot_size);
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

  std::string describe() const {
    std::string out = client.gids().front();
    for (const Qp& q : qps) {
      out += fmt::format(" {}:{}:{}", q.qpn, q.keys.rkey,
                         reinterpret_cast<std::uint64_t>(q.memory.data));
    }
    return out;
  }

  void connect(const std::string& description) {
    std::istringstream in(description);
    in >> remote_gid;
    std::string item;
    while (in >> item) {
      RemoteQp r;
      if (std::sscanf(item.c_str(), "%u:%u:%lu", &r.qpn, &r.rkey, &r.vaddr) != 3) {
        throw std::runtime_error("malformed QP description from the peer: " + item);
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
    }
  }

  std::byte* slot(std::uint32_t qp, std::uint64_t index) {
    return qps[qp].memory.data + (index % slots) * slot_size;
  }
  std::uint64_t remote_slot(std::uint32_t qp, std::uint64_t index) const {
    return remote[qp].vaddr + (index % slots) * slot_size;
  }

  // Polls one completion, spinning then blocking; throws on an error completion or timeout.
  ShmClient::Completion next(int timeout_seconds, const char* side) {
    ShmClient::Completion c;
    while (client.poll_cq(cq, {&c, 1}) == 0) {
      if (!client.wait(spin_window(), std::chrono::milliseconds(timeout_seconds * 1000))) {
        throw std::runtime_error(
            fmt::format("Timed out: no completion for {} s at the {}", timeout_seconds, side));
      }
    }
    if (!c.ok()) {
      throw std::runtime_error(fmt::format("Completion with error at {}: {} (status {}), wr_id {}",
                                           side, status_text(c.status), c.status, c.wr_id));
    }
    return c;
  }

  ShmClient& client;
  std::uint32_t pd = 0;
  std::uint32_t cq = 0;
  std::uint64_t slot_size = 0;
  std::uint32_t slots = 0;
  std::vector<Qp> qps;
  std::vector<RemoteQp> remote;
  std::string remote_gid;
};

std::uint64_t wr_id(std::uint32_t qp, std::uint64_t seq) {
  return (static_cast<std::uint64_t>(qp) << 40) | seq;
}
std::uint32_t wr_qp(std::uint64_t id) {
  return static_cast<std::uint32_t>(id >> 40);
}
std::uint64_t wr_seq(std::uint64_t id) {
  return id & ((1ull << 40) - 1);
}

// The server posts receives when messages consume them: SEND, and WRITE with immediate (used
// with --verify so that the server sees, and checks, every message).
bool server_receives(const PerfOptions& o) {
  return o.mode == Mode::kBandwidth &&
         (o.verb == Verb::kSend || (o.verb == Verb::kWrite && o.verify));
}

SizeResult client_bandwidth(Endpoint& e, const PerfOptions& o, std::uint64_t size) {
  const std::uint32_t nqp = o.qps;
  // With --verify a slot is never reused while a message from it may still be in flight.
  const std::uint64_t depth = o.verify ? std::min<std::uint64_t>(o.tx_depth, e.slots) : o.tx_depth;
  std::vector<std::uint64_t> posted(nqp, 0), completed(nqp, 0);
  const std::uint64_t total = o.iterations * nqp;
  std::uint64_t done = 0;
  std::vector<double> stamps;  // completion times
  stamps.reserve(total);
  std::vector<std::vector<double>> post_times(nqp, std::vector<double>(o.iterations));
  std::vector<double> posted_of_completed;  // in completion order, for the peak
  posted_of_completed.reserve(total);
  const auto start = SteadyClock::now();
  while (done < total) {
    for (std::uint32_t q = 0; q < nqp; ++q) {
      while (posted[q] < o.iterations && posted[q] - completed[q] < depth) {
        const std::uint64_t seq = posted[q];
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
        post_times[q][seq] = usec_between(start, SteadyClock::now());
        e.client.post_send(e.qps[q].qpn, wr);
        ++posted[q];
      }
    }
    const auto c = e.next(o.timeout_seconds, "client");
    const std::uint32_t q = wr_qp(c.wr_id);
    if (o.verify && o.verb == Verb::kRead) {
      // The server filled slot i with message i's pattern once; reads land in our slot.
      const std::uint64_t seq = wr_seq(c.wr_id);
      check(e.slot(q, seq), size, seq % e.slots, q, "READ data");
    }
    ++completed[q];
    ++done;
    // When the instance completed it, not when this process got to it: a client descheduled
    // for a while would otherwise see a burst of completions and a peak that never was.
    stamps.push_back(usec_between(start, std::max(c.completed_at, start)));
    posted_of_completed.push_back(post_times[q][wr_seq(c.wr_id)]);
  }
  const double seconds = stamps.back() / 1e6;
  SizeResult r;
  r.bw.bytes = size;
  r.bw.iterations = o.iterations;
  r.bw.average_bytes_per_second = static_cast<double>(size * total) / seconds;
  r.bw.message_rate = static_cast<double>(total) / seconds;
  // Windows of at least the messages all QPs keep in flight.
  r.bw.peak_bytes_per_second =
      std::max(r.bw.average_bytes_per_second,
               peak_bytes_per_second(posted_of_completed, stamps, size, depth * nqp));
  r.samples = std::move(stamps);
  r.post_times = std::move(posted_of_completed);
  return r;
}

void server_prepare(Endpoint& e, const PerfOptions& o, std::uint64_t size,
                    std::vector<std::uint64_t>& next_recv) {
  next_recv.assign(o.qps, 0);
  if (o.verb == Verb::kRead && o.mode == Mode::kLatency && o.verify) {
    fill(e.slot(0, 0), size, 0, 0);
  }
  if (o.verb == Verb::kRead && o.mode == Mode::kBandwidth && o.verify) {
    for (std::uint32_t q = 0; q < o.qps; ++q) {
      for (std::uint32_t s = 0; s < e.slots; ++s) {
        fill(e.slot(q, s), size, s, q);
      }
    }
  }
  if (!server_receives(o)) {
    return;
  }
  // Without --verify receives may share buffers (as in perftest); with it each outstanding
  // receive owns a slot, and the sender never has more in flight than there are slots.
  const std::uint64_t initial =
      o.verify ? e.slots : std::min<std::uint64_t>(1024, ShmClient::kMaxOutstanding / o.qps);
  for (std::uint32_t q = 0; q < o.qps; ++q) {
    for (; next_recv[q] < std::min(initial, o.iterations); ++next_recv[q]) {
      const std::uint64_t seq = next_recv[q];
      e.client.post_recv(e.qps[q].qpn,
                         {wr_id(q, seq),
                          {reinterpret_cast<std::uint64_t>(e.slot(q, seq)),
                           static_cast<std::uint32_t>(e.slot_size), e.qps[q].keys.lkey}});
    }
  }
}

void server_bandwidth(Endpoint& e, const PerfOptions& o, std::uint64_t size,
                      std::vector<std::uint64_t>& next_recv) {
  if (!server_receives(o)) {
    return;
  }
  std::uint64_t received = 0;
  const std::uint64_t total = o.iterations * o.qps;
  while (received < total) {
    const auto c = e.next(o.timeout_seconds, "server");
    const std::uint32_t q = wr_qp(c.wr_id);
    const std::uint64_t seq = wr_seq(c.wr_id);
    if (c.byte_len != size) {
      throw std::runtime_error(fmt::format(
          "Data verification failed: received {} bytes, expected {}", c.byte_len, size));
    }
    if (o.verify) {
      // A WRITE with immediate lands in the slot its sequence number names.
      const std::uint64_t data_seq = o.verb == Verb::kWrite ? c.imm : seq;
      check(e.slot(q, data_seq), size, data_seq, q,
            o.verb == Verb::kWrite ? "RDMA WRITE data" : "SEND data");
    }
    ++received;
    if (next_recv[q] < o.iterations) {
      const std::uint64_t n = next_recv[q]++;
      e.client.post_recv(e.qps[q].qpn,
                         {wr_id(q, n),
                          {reinterpret_cast<std::uint64_t>(e.slot(q, n)),
                           static_cast<std::uint32_t>(e.slot_size), e.qps[q].keys.lkey}});
    }
  }
}

// Waits for the byte of registered memory that the peer's RDMA WRITE sets, as perftest's
// write_lat polls it. The byte is watched (ShmClient::watch_writes), so after the spin window
// the client blocks and the instance wakes it when the WRITE lands, exactly as for a
// completion: waiting for a WRITE costs what waiting for a SEND costs.
void wait_for_marker(Endpoint& e, std::byte* p, std::byte marker, int timeout_seconds) {
  const auto arrived = [p, marker] {
    return std::atomic_ref<std::byte>(*p).load(std::memory_order_acquire) == marker;
  };
  if (!e.client.wait_until(arrived, spin_window(), std::chrono::seconds(timeout_seconds))) {
    throw std::runtime_error("Timed out waiting for the peer's RDMA WRITE");
  }
}

std::byte marker_for(std::uint64_t i) {
  return static_cast<std::byte>(i % 255 + 1);
}

void post_one(Endpoint& e, SendOpcode op, std::uint64_t id, std::byte* local, std::uint64_t size,
              std::uint64_t remote_addr) {
  SendWr wr;
  wr.wr_id = id;
  wr.opcode = op;
  wr.sge = {reinterpret_cast<std::uint64_t>(local), static_cast<std::uint32_t>(size),
            e.qps[0].keys.lkey};
  wr.remote_addr = remote_addr;
  wr.rkey = e.remote[0].rkey;
  e.client.post_send(e.qps[0].qpn, wr);
}

void post_recv_slot(Endpoint& e, std::uint64_t id, std::uint64_t slot) {
  e.client.post_recv(e.qps[0].qpn, {id,
                                    {reinterpret_cast<std::uint64_t>(e.slot(0, slot)),
                                     static_cast<std::uint32_t>(e.slot_size), e.qps[0].keys.lkey}});
}

// Ping-pong; slot 0 sends, slot 1 receives. `client` measures.
SizeResult latency(Endpoint& e, const PerfOptions& o, std::uint64_t size, bool client) {
  SizeResult r;
  const char* side = client ? "client" : "server";
  std::byte* out = e.slot(0, 0);
  std::byte* in = e.slot(0, 1);
  const std::uint64_t remote_in = e.remote_slot(0, 1);
  if (o.verb == Verb::kWrite) {
    e.client.watch_writes(in + size - 1, 1);  // the marker byte
  }
  for (std::uint64_t i = 0; i < o.iterations; ++i) {
    const auto t0 = SteadyClock::now();
    if (o.verb == Verb::kRead) {
      if (!client) {
        return r;  // the passive side of READ does nothing
      }
      if (o.verify) {
        std::memset(out, 0xee, size);
      }
      post_one(e, SendOpcode::kRdmaRead, i, out, size, e.remote_slot(0, 0));
      e.next(o.timeout_seconds, side);
      if (o.verify) {
        check(out, size, 0, 0, "READ data");
      }
      r.samples.push_back(usec_between(t0, SteadyClock::now()));
      continue;
    }
    const bool sends_first = client;
    auto receive = [&] {
      if (o.verb == Verb::kSend) {
        while (true) {
          const auto c = e.next(o.timeout_seconds, side);
          // Our own SEND completions are skipped here (draining them elsewhere could swallow
          // the next receive).
          if (c.opcode == static_cast<std::uint8_t>(WcOpcode::kRecv)) {
            post_recv_slot(e, 1000000 + i + 1, 1);
            break;
          }
        }
      } else {
        wait_for_marker(e, in + size - 1, marker_for(i), o.timeout_seconds);
        ShmClient::Completion drained[16];
        e.client.poll_cq(e.cq, drained);  // WRITE completions: nothing to wait for
      }
      if (o.verify) {
        check(in, o.verb == Verb::kWrite ? size - 1 : size, i, 0, "ping-pong data");
      }
    };
    auto transmit = [&] {
      if (o.verify) {
        fill(out, size, i, 0);
      }
      if (o.verb == Verb::kWrite) {
        out[size - 1] = marker_for(i);
        post_one(e, SendOpcode::kRdmaWrite, i, out, size, remote_in);
      } else {
        post_one(e, SendOpcode::kSend, i, out, size, 0);
      }
    };
    if (sends_first) {
      transmit();
      receive();
    } else {
      receive();
      transmit();
    }
    r.samples.push_back(usec_between(t0, SteadyClock::now()) / 2);  // one way, as perftest
  }
  return r;
}

void print_connection(std::ostream& out, Endpoint& e, const PerfOptions& o) {
  const bool rdma = o.verb != Verb::kSend;
  for (std::size_t i = 0; i < e.qps.size(); ++i) {
    out << address_line(true, e.qps[i].qpn, e.qps[i].keys.rkey,
                        reinterpret_cast<std::uint64_t>(e.qps[i].memory.data), rdma)
        << gid_line(e.client.gids().front())
        << address_line(false, e.remote[i].qpn, e.remote[i].rkey, e.remote[i].vaddr, rdma)
        << gid_line(e.remote_gid);
  }
  out << dashes() << (o.mode == Mode::kBandwidth ? bw_header(o.report_gbits) : lat_header());
  out.flush();
}

int run_client(const PerfOptions& o, std::ostream& out) {
  // The instance first, as perftest opens its device before it dials: a wrong socket is
  // reported at once, not after the server answered.
  ShmClient device(o.socket);
  OobChannel oob = OobChannel::connect(o.server, o.port);
  oob.send_line(header_line(o));
  const std::string reply = oob.receive_line();
  if (!reply.starts_with("OK ")) {
    throw std::runtime_error("server refused the test: " + reply);
  }
  Endpoint e(device, o, *std::max_element(o.sizes.begin(), o.sizes.end()));
  e.connect(reply.substr(3));
  oob.send_line("QPS " + e.describe());
  if (oob.receive_line() != "READY") {
    throw std::runtime_error("server failed to connect its QPs");
  }
  out << banner(o.verb, o.mode, false, o.qps, o.tx_depth);
  print_connection(out, e, o);
  nlohmann::json results = nlohmann::json::array();
  if (o.mode == Mode::kLatency && o.verb == Verb::kSend) {
    post_recv_slot(e, 1000000, 1);  // each ping answered re-posts one
  }
  for (std::uint64_t size : o.sizes) {
    if (o.mode == Mode::kLatency) {
      std::memset(e.slot(0, 1), 0, e.slot_size);  // no marker of the previous size may match
    }
    oob.send_line(fmt::format("SIZE {}", size));
    const std::string go = oob.receive_line();
    if (go != "GO") {
      throw std::runtime_error("server failed: " + go);
    }
    SizeResult r;
    const CpuMeter meter(device.instance_pid());
    if (o.mode == Mode::kBandwidth) {
      r = client_bandwidth(e, o, size);
    } else {
      r = latency(e, o, size, true);
      r.lat = summarize_latency(size, r.samples);
    }
    r.cpu = meter.stop();
    oob.send_line(encode_result(r, o.mode));
    const std::string verdict = oob.receive_line();
    if (verdict != "DONE") {
      throw std::runtime_error(verdict.starts_with("FAIL ") ? verdict.substr(5) : verdict);
    }
    print_row(out, r, o);
    results.push_back(json_of(r, o));
  }
  oob.send_line("BYE");
  out << dashes();
  write_json(o, results, false);
  return 0;
}

int run_server(const PerfOptions& o, std::ostream& out) {
  // The instance before the wait for a client, as perftest opens its device first: a server
  // with a wrong socket fails now instead of waiting for a client that will fail with it.
  ShmClient device(o.socket);
  OobChannel oob = OobChannel::listen(o.bind, o.port);
  out << waiting_banner();
  out.flush();
  oob.accept(std::chrono::seconds(o.timeout_seconds * 10));
  // The client decides the test; the server follows (so a scenario configures one side).
  const PerfOptions s = accept_test(oob, o);
  Endpoint e(device, s, *std::max_element(s.sizes.begin(), s.sizes.end()));
  oob.send_line("OK " + e.describe());
  const std::string qps = oob.receive_line();
  if (!qps.starts_with("QPS ")) {
    throw std::runtime_error("client sent no QP description");
  }
  e.connect(qps.substr(4));
  oob.send_line("READY");
  out << banner(s.verb, s.mode, true, s.qps, s.verb == Verb::kSend ? e.slots : s.tx_depth);
  print_connection(out, e, s);
  nlohmann::json results = nlohmann::json::array();
  std::vector<std::uint64_t> next_recv;
  if (s.mode == Mode::kLatency && s.verb == Verb::kSend) {
    post_recv_slot(e, 1000000, 1);  // each pong received re-posts one
  }
  while (true) {
    const std::string line = oob.receive_line(std::chrono::seconds(s.timeout_seconds * 10));
    if (line == "BYE") {
      break;
    }
    std::uint64_t size = 0;
    if (std::sscanf(line.c_str(), "SIZE %lu", &size) != 1) {
      throw std::runtime_error("unexpected message from the client: " + line);
    }
    SizeResult own;
    std::string failure;
    const CpuMeter meter(device.instance_pid());
    try {
      if (s.mode == Mode::kLatency) {
        std::memset(e.slot(0, 1), 0, e.slot_size);
      }
      server_prepare(e, s, size, next_recv);
      oob.send_line("GO");
      if (s.mode == Mode::kBandwidth) {
        server_bandwidth(e, s, size, next_recv);
      } else {
        own = latency(e, s, size, false);
      }
    } catch (const std::exception& ex) {
      failure = ex.what();
    }
    SizeResult r = decode_result(oob.receive_line(), s.mode);
    r.cpu = meter.stop();  // the server's own figures: its generator, its instance
    if (!failure.empty()) {
      oob.send_line("FAIL " + failure);
      throw std::runtime_error(failure);
    }
    oob.send_line("DONE");
    print_row(out, r, s);
    results.push_back(json_of(r, s));
  }
  out << dashes();
  write_json(s, results, true);
  return 0;
}

}  // namespace

int run_load_generator(const PerfOptions& o, std::ostream& out, std::ostream& err) {
  try {
    choose_spin(o.mode);
    return o.server.empty() ? run_server(o, out) : run_client(o, out);
  } catch (const std::exception& e) {
    out.flush();
    err << e.what() << "\n";
    return 1;
  }
}

}  // namespace ernic::emu::perf
