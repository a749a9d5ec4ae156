// What the mesh's process tests share: a QP with a registered buffer on one instance, a
// supervisor configuration, and a verified SEND/WRITE/READ exchange.
#pragma once

#include <catch2/catch.hpp>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include "frontend/shm_client.h"
#include "supervisor.h"
#include "test_process.h"

namespace ernic::emu {

inline constexpr std::size_t kBuffer = 16u << 20;

// One QP with a registered buffer on one instance.
struct Endpoint {
  explicit Endpoint(ShmClient& c) : client(c) {
    pd = c.alloc_pd();
    cq = c.create_cq();
    memory = c.allocate(kBuffer);
    keys = c.reg_mr(pd, memory, 0, kBuffer,
                    kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead);
    qpn = c.create_qp(pd, cq, cq);
    QpAttributes a;
    a.state = QpState::kInit;
    a.access = kAccessRemoteWrite | kAccessRemoteRead;
    c.modify_qp(qpn, a);
  }
  void connect_to(const Endpoint& peer) {
    QpAttributes a;
    a.state = QpState::kRtr;
    a.remote_gid = peer.client.gids().front();
    a.remote_qpn = peer.qpn;
    client.modify_qp(qpn, a);
    a.state = QpState::kRts;
    client.modify_qp(qpn, a);
  }
  std::uint64_t addr(std::size_t offset) const {
    return reinterpret_cast<std::uint64_t>(memory.data + offset);
  }
  SendWr wr(SendOpcode op, std::uint64_t id, std::size_t offset, std::uint32_t length,
            const Endpoint& peer, std::size_t remote_offset) const {
    SendWr w;
    w.wr_id = id;
    w.opcode = op;
    w.sge = {addr(offset), length, keys.lkey};
    w.remote_addr = peer.addr(remote_offset);
    w.rkey = peer.keys.rkey;
    return w;
  }
  ShmClient::Completion next(int seconds = 10) {
    ShmClient::Completion c;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (client.poll_cq(cq, {&c, 1}) == 0) {
      REQUIRE(std::chrono::steady_clock::now() < deadline);
      client.wait(std::chrono::microseconds(10), std::chrono::milliseconds(200));
    }
    return c;
  }

  ShmClient& client;
  std::uint32_t pd, cq, qpn;
  ShmClient::Memory memory;
  MemoryKeys keys;
};

// A QP on each of two clients (the same client twice for a loopback pair), connected.
struct EndpointPair {
  EndpointPair(ShmClient& x, ShmClient& y) : a(x), b(y) {
    a.connect_to(b);
    b.connect_to(a);
  }
  Endpoint a;
  Endpoint b;
};

// A verified exchange between a client of `first` and one of `second` (socket paths).
inline void fill(std::byte* p, std::size_t n, unsigned seed) {
  for (std::size_t i = 0; i < n; ++i) {
    p[i] = static_cast<std::byte>((i * 7 + seed + (i >> 9)) & 0xff);
  }
}

inline bool same(const std::byte* a, const std::byte* b, std::size_t n) {
  return std::memcmp(a, b, n) == 0;
}

inline SupervisorConfig mesh_config(const std::filesystem::path& dir, int instances,
                                    const std::string& token = "mesh-test-token") {
  SupervisorConfig c;
  c.executable = ERNIC_BINARY;
  c.instances = instances;
  c.token = token;
  c.dir = dir;
  c.ready_timeout = std::chrono::milliseconds(20000);
  return c;
}

// The same, with options added to every instance's command line.
inline SupervisorConfig mesh_config_with(const std::filesystem::path& dir, int instances,
                                         std::vector<std::string> extra_args) {
  SupervisorConfig c = mesh_config(dir, instances);
  c.extra_args = std::move(extra_args);
  return c;
}

// SEND, WRITE and READ of `size` bytes from a to b, each checked byte for byte.
inline void exchange(Endpoint& a, Endpoint& b, std::uint32_t size, unsigned seed) {
  fill(a.memory.data, size, seed);
  b.client.post_recv(b.qpn, {1, {b.addr(0), size, b.keys.lkey}});
  a.client.post_send(a.qpn, a.wr(SendOpcode::kSend, 10, 0, size, b, 0));
  auto c = a.next();
  REQUIRE(c.ok());
  auto r = b.next();
  REQUIRE(r.ok());
  CHECK(r.byte_len == size);
  CHECK(same(a.memory.data, b.memory.data, size));

  fill(a.memory.data, size, seed + 1);
  a.client.post_send(a.qpn, a.wr(SendOpcode::kRdmaWrite, 11, 0, size, b, size));
  REQUIRE(a.next().ok());
  CHECK(same(a.memory.data, b.memory.data + size, size));

  fill(b.memory.data + 2 * size, size, seed + 2);
  a.client.post_send(a.qpn, a.wr(SendOpcode::kRdmaRead, 12, 3 * size, size, b, 2 * size));
  REQUIRE(a.next().ok());
  CHECK(same(a.memory.data + 3 * size, b.memory.data + 2 * size, size));
}

inline void exchange_between(const std::string& first, const std::string& second, unsigned seed) {
  ShmClient x(first);
  if (first == second) {
    EndpointPair pair(x, x);
    exchange(pair.a, pair.b, 65536, seed);
    return;
  }
  ShmClient y(second);
  EndpointPair pair(x, y);
  exchange(pair.a, pair.b, 300000, seed);
}

// `ernicctl perf` between the two instances with --verify; true when both sides pass.
// A worker of `manager` outside the supervisor, with options of its own; its files are
// dir/NAME.sock, .log, .stats and .out.
inline pid_t spawn_worker(const std::filesystem::path& dir, const InstanceInfo& manager,
                          const std::string& name, const std::string& gid,
                          const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args = {"emulator",
                                   "--backend",
                                   "tcp:worker:127.0.0.1:" + std::to_string(manager.mesh_port),
                                   "--socket",
                                   (dir / (name + ".sock")).string(),
                                   "--token-file",
                                   (dir / "mesh.token").string(),
                                   "--gids",
                                   gid,
                                   "--log-file",
                                   (dir / (name + ".log")).string(),
                                   "--stats-file",
                                   (dir / (name + ".stats")).string()};
  args.insert(args.end(), extra.begin(), extra.end());
  return spawn_ernicctl(args, dir / (name + ".out"));
}

inline std::uint64_t stat_of(const std::filesystem::path& stats, const std::string& key) {
  const auto s = Supervisor::read_stats(stats);
  return s.count(key) == 1 ? std::stoull(s.at(key)) : 0;
}

// A worker "w" of `manager` spawned with `extra`, once its 3 lanes to the manager are up (local)
// and it exchanged verified traffic with the manager's clients (SEND and WRITE from the
// manager's, the READ response from its own), both stats files rewritten since.
inline pid_t worker_after_exchange(const std::filesystem::path& dir, const InstanceInfo& manager,
                                   const std::vector<std::string>& extra, unsigned seed) {
  const pid_t worker = spawn_worker(dir, manager, "w", "10.9.0.2", extra);
  const auto stats = dir / "w.stats";
  REQUIRE(
      observe([&] { return stat_of(stats, "mesh_local_lanes") == 3; }, std::chrono::seconds(15)));
  exchange_between(manager.socket.string(), (dir / "w.sock").string(), seed);
  const auto exchanged = std::filesystem::file_time_type::clock::now();
  REQUIRE(observe(
      [&] {
        return std::filesystem::last_write_time(manager.stats) > exchanged &&
               std::filesystem::last_write_time(stats) > exchanged;
      },
      std::chrono::seconds(5)));
  return worker;
}

inline bool perf_passes(const Supervisor& s, const std::filesystem::path& dir, int port_offset) {
  const std::string port = port_for_test(port_offset);
  const pid_t server =
      spawn_ernicctl({"perf", "write_bw", "--socket", s.instances()[0].socket.string(), "-p", port,
                      "-s", "1048576", "-n", "64", "--verify"},
                     dir / "verify-server.txt");
  const pid_t client =
      spawn_ernicctl({"perf", "write_bw", "--socket", s.instances()[1].socket.string(), "-p", port,
                      "-s", "1048576", "-n", "64", "--verify", "127.0.0.1"},
                     dir / "verify-client.txt");
  const bool client_ok = wait_exit(client, std::chrono::seconds(60)) == 0;
  return wait_exit(server, std::chrono::seconds(10)) == 0 && client_ok;
}

}  // namespace ernic::emu
