#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ostream>
#include <thread>

#include <fmt/format.h>

#include "frontend/shm_client.h"
#include "perf/cpu_usage.h"
#include "perf/load_generator.h"

namespace ernic::emu::perf {
namespace {

using SteadyClock = std::chrono::steady_clock;

struct Summary {
  double median = 0;
  double p99 = 0;
  std::size_t count = 0;
};

Summary summarize(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  Summary s;
  s.count = v.size();
  if (!v.empty()) {
    s.median = v[v.size() / 2];
    s.p99 = v[std::min(v.size() - 1, v.size() * 99 / 100)];
  }
  return s;
}

// Waits for one completion on `cq`; busy = never block.
ShmClient::Completion await(ShmClient& c, std::uint32_t cq, bool busy) {
  ShmClient::Completion out;
  const auto start = SteadyClock::now();
  while (c.poll_cq(cq, {&out, 1}) == 0) {
    if (SteadyClock::now() - start > std::chrono::seconds(10)) {
      throw std::runtime_error("no completion within 10 s");
    }
    if (busy) {
      sched_yield();  // the instance may need this very CPU (two cores)
    } else if (!c.wait(std::chrono::microseconds(0), std::chrono::milliseconds(10000))) {
      throw std::runtime_error("no completion within 10 s");
    }
  }
  if (!out.ok()) {
    throw std::runtime_error(fmt::format("completion with error (status {})", out.status));
  }
  return out;
}

std::vector<double> nop_round_trips(ShmClient& c, std::uint32_t cq, std::uint64_t n, bool busy) {
  std::vector<double> samples;
  for (std::uint64_t i = 0; i < n; ++i) {
    const auto t0 = SteadyClock::now();
    c.post_nop(cq, i);
    await(c, cq, busy);
    samples.push_back(std::chrono::duration<double, std::micro>(SteadyClock::now() - t0).count());
  }
  return samples;
}

struct Side {
  ShmClient* client;
  std::uint32_t pd, cq, qpn;
  ShmClient::Memory memory;
  MemoryKeys keys;
};

Side make_side(ShmClient& c) {
  Side s{&c, c.alloc_pd(), 0, 0, {}, {}};
  s.cq = c.create_cq();
  s.memory = c.allocate(4096);
  s.keys = c.reg_mr(s.pd, s.memory, 0, 4096, kAccessLocalWrite | kAccessRemoteWrite);
  s.qpn = c.create_qp(s.pd, s.cq, s.cq);
  QpAttributes a;
  a.state = QpState::kInit;
  a.access = kAccessRemoteWrite;
  c.modify_qp(s.qpn, a);
  return s;
}

void connect(Side& s, const Side& peer) {
  QpAttributes a;
  a.state = QpState::kRtr;
  a.remote_gid = peer.client->gids().front();
  a.remote_qpn = peer.qpn;
  s.client->modify_qp(s.qpn, a);
  a.state = QpState::kRts;
  s.client->modify_qp(s.qpn, a);
}

// An 8-byte WRITE completes when the responder's ACK is back: one round trip through the
// engines (and the mesh, when the peer is another instance).
std::vector<double> write_round_trips(Side& from, const Side& to, std::uint64_t n) {
  std::vector<double> samples;
  for (std::uint64_t i = 0; i < n; ++i) {
    SendWr wr;
    wr.wr_id = i;
    wr.opcode = SendOpcode::kRdmaWrite;
    wr.sge = {reinterpret_cast<std::uint64_t>(from.memory.data), 8, from.keys.lkey};
    wr.remote_addr = reinterpret_cast<std::uint64_t>(to.memory.data) + 64;
    wr.rkey = to.keys.rkey;
    const auto t0 = SteadyClock::now();
    from.client->post_send(from.qpn, wr);
    await(*from.client, from.cq, true);
    samples.push_back(std::chrono::duration<double, std::micro>(SteadyClock::now() - t0).count());
  }
  return samples;
}

void row(std::ostream& out, const std::string& name, const Summary& s) {
  out << fmt::format(" {:<58} {:>12.2f} {:>12.2f} {:>9}\n", name, s.median, s.p99, s.count);
}

}  // namespace

int run_micro(const MicroOptions& o, std::ostream& out, std::ostream& err) {
  try {
    ShmClient client(o.socket);
    const std::uint32_t cq = client.create_cq();
    out << "---------------------------------------------------------------------------------------"
           "\n"
        << "                    ERNIC emulator microbenchmarks\n"
        << "---------------------------------------------------------------------------------------"
           "\n"
        << fmt::format(" {:<58} {:>12} {:>12} {:>9}\n", "measurement", "median[usec]", "p99[usec]",
                       "samples");
    nop_round_trips(client, cq, 200, true);  // warm up
    row(out, "doorbell round trip (NOP; client busy-polls)",
        summarize(nop_round_trips(client, cq, o.iterations, true)));
    row(out, "doorbell + completion notification (NOP; client blocks)",
        summarize(nop_round_trips(client, cq, o.iterations, false)));
    Side a = make_side(client);
    Side b = make_side(client);
    connect(a, b);
    connect(b, a);
    write_round_trips(a, b, 100);
    row(out, "engine round trip, QP pair in one instance (8 B WRITE)",
        summarize(write_round_trips(a, b, o.iterations)));
    if (!o.peer_socket.empty()) {
      ShmClient peer(o.peer_socket);
      Side local = make_side(client);
      Side remote = make_side(peer);
      connect(local, remote);
      connect(remote, local);
      write_round_trips(local, remote, 100);
      row(out,
          fmt::format("mesh round trip, node {} -> node {} (8 B WRITE)", client.node(),
                      peer.node()),
          summarize(write_round_trips(local, remote, o.iterations)));
    }
    const pid_t pid = client.instance_pid();
    const double before = process_cpu_seconds(pid);
    const auto t0 = SteadyClock::now();
    std::this_thread::sleep_for(std::chrono::duration<double>(o.idle_seconds));
    const double wall = std::chrono::duration<double>(SteadyClock::now() - t0).count();
    const double used = process_cpu_seconds(pid) - before;
    out << fmt::format(
        " idle instance CPU (pid {}, {:.1f} s)                          : {:.2f} % of a core\n",
        pid, wall, 100.0 * used / wall);
    out << "---------------------------------------------------------------------------------------"
           "\n";
    return 0;
  } catch (const std::exception& e) {
    err << "ernicctl perf micro: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace ernic::emu::perf
