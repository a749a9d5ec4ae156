// Real `ernicctl emulator` processes on loopback, driven through the shared-memory front end.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <thread>

#include "engine/wire.h"
#include "frontend/shm_client.h"
#include "mesh/mesh_test_support.h"
#include "runtime/cpu_placement.h"
#include "runtime/scheduling.h"
#include "supervisor.h"
#include "test_affinity.h"
#include "test_dir.h"
#include "test_process.h"

namespace ernic::emu {
namespace {

// Runs ernicctl with `args` and waits (bounded) for it to exit; returns the exit status.
int run_to_exit(const std::vector<std::string>& args, const std::filesystem::path& log) {
  return wait_exit(spawn_ernicctl(args, log), std::chrono::seconds(15));
}

// Whether the stats file of every instance says `value` for `key` within `timeout`.
bool every_instance_counts(const Supervisor& supervisor, const std::string& key, int value,
                           std::chrono::seconds timeout) {
  return observe(
      [&] {
        for (const auto& instance : supervisor.instances()) {
          const auto stats = Supervisor::read_stats(instance.stats);
          const auto found = stats.find(key);
          if (found == stats.end() || found->second != std::to_string(value)) {
            return false;
          }
        }
        return true;
      },
      timeout);
}

// Whether every instance counts `peers` established mesh peers within `timeout`. An instance is
// ready once it registered with the manager; the worker-to-worker connections of the full mesh
// come after, and a send to a node without a connection fails instead of waiting.
bool mesh_complete(const Supervisor& supervisor, int peers, std::chrono::seconds timeout) {
  return every_instance_counts(supervisor, "mesh_peers", peers, timeout);
}

TEST_CASE("three instances carry verified traffic between every pair") {
  TestDir dir("mesh3");
  Supervisor supervisor;
  supervisor.start(mesh_config(dir.path(), 3));
  REQUIRE(mesh_complete(supervisor, 2, std::chrono::seconds(10)));
  std::vector<std::unique_ptr<ShmClient>> clients;
  for (const auto& i : supervisor.instances()) {
    clients.push_back(std::make_unique<ShmClient>(i.socket.string()));
    CHECK(clients.back()->node() == static_cast<NodeId>(i.id - 1));
  }
  unsigned seed = 1;
  for (int from = 0; from < 3; ++from) {
    for (int to = 0; to < 3; ++to) {
      if (from == to) {
        continue;
      }
      INFO("instance " << from + 1 << " -> instance " << to + 1);
      Endpoint a(*clients[from]);
      Endpoint b(*clients[to]);
      a.connect_to(b);
      b.connect_to(a);
      exchange(a, b, 300000, seed++);  // two segments and a bit
    }
  }
  CHECK(supervisor.check_alive().empty());
}

// A run reads each point's counters from the stats files once the point's programs are done:
// the instances write them when traffic stops, not only every interval (a minute here).
TEST_CASE("the stats file counts traffic as soon as it stops, clients still attached") {
  TestDir dir("stats-when-idle");
  Supervisor supervisor;
  supervisor.start(mesh_config_with(dir.path(), 2, {"--stats-interval-ms", "60000"}));
  ShmClient manager(supervisor.instances()[0].socket.string());
  ShmClient worker(supervisor.instances()[1].socket.string());
  EndpointPair pair(manager, worker);
  exchange(pair.a, pair.b, 300000, 7);
  // The manager sent the SEND and the WRITE; the worker received them.
  const auto counted = [&](int instance, const char* key, std::uint64_t bytes) {
    const auto& stats = supervisor.instances()[static_cast<std::size_t>(instance)].stats;
    return observe([&] { return stat_of(stats, key) >= bytes; }, std::chrono::seconds(5));
  };
  CHECK(counted(0, "bytes_sent", 2 * 300000));
  CHECK(counted(1, "bytes_received", 2 * 300000));
}

// On fewer CPUs than a pair's two programs and two loops, the loops of a bandwidth test share
// one CPU and leave the rest to the programs; a ping-pong's loops keep off its programs' CPUs
// (runtime/cpu_placement.h).
TEST_CASE("the loops of a stream gather on one CPU, and a ping-pong's keep off its program") {
  const std::vector<int> cpus = allowed_cpus();
  if (cpus.size() < 2) {
    WARN("one CPU: there is nowhere else for the loops to go");
    return;
  }
  TestDir dir("gather");
  Supervisor supervisor;
  supervisor.start(mesh_config(dir.path(), 2));
  const pid_t manager_loop = supervisor.instances()[0].pid;
  const pid_t worker_loop = supervisor.instances()[1].pid;
  ShmClient manager(supervisor.instances()[0].socket.string());
  ShmClient worker(supervisor.instances()[1].socket.string());
  EndpointPair pair(manager, worker);
  const std::vector<int> gathered =
      cpus.size() < CpuPlacement::kEnoughCpus ? std::vector<int>{cpus.back()} : cpus;
  std::uint64_t id = 0;
  const auto stream = [&] {  // a window of four 1 MiB WRITEs at a time
    constexpr std::uint32_t kMiB = 1u << 20;
    for (std::uint32_t i = 0; i < 4; ++i) {
      pair.a.client.post_send(
          pair.a.qpn, pair.a.wr(SendOpcode::kRdmaWrite, ++id, i * kMiB, kMiB, pair.b, i * kMiB));
    }
    for (int i = 0; i < 4; ++i) {
      REQUIRE(pair.a.next().ok());
    }
    return allowed_cpus(manager_loop) == gathered && allowed_cpus(worker_loop) == gathered;
  };
  CHECK(observe(stream, std::chrono::seconds(20)));

  // One 4 KiB WRITE at a time from a program spinning on the CPU the stream gathered on.
  PinnedThread pinned(cpus.back());
  const auto ping_pong = [&] {
    pair.a.client.post_send(pair.a.qpn,
                            pair.a.wr(SendOpcode::kRdmaWrite, ++id, 0, 4096, pair.b, 0));
    REQUIRE(pair.a.next().ok());
    const std::vector<int> now = allowed_cpus(manager_loop);
    return std::find(now.begin(), now.end(), cpus.back()) == now.end();
  };
  CHECK(observe(ping_pong, std::chrono::seconds(20)));
}

TEST_CASE("every size of the sweep arrives byte for byte") {
  TestDir dir("sweep");
  Supervisor supervisor;
  supervisor.start(mesh_config(dir.path(), 2));
  ShmClient manager(supervisor.instances()[0].socket.string());
  ShmClient worker(supervisor.instances()[1].socket.string());
  Endpoint a(manager);
  Endpoint b(worker);
  a.connect_to(b);
  b.connect_to(a);
  for (std::uint32_t size = 4096; size <= (4u << 20); size *= 2) {
    INFO("size " << size);
    exchange(a, b, size, size / 4096);
  }
  // 8 MiB needs the whole 16 MiB buffer twice over: check it separately, each way.
  const std::uint32_t big = 8u << 20;
  fill(a.memory.data, big, 77);
  a.client.post_send(a.qpn, a.wr(SendOpcode::kRdmaWrite, 1, 0, big, b, big));
  REQUIRE(a.next().ok());
  CHECK(same(a.memory.data, b.memory.data + big, big));
  fill(b.memory.data, big, 78);
  a.client.post_send(a.qpn, a.wr(SendOpcode::kRdmaRead, 2, big, big, b, 0));
  REQUIRE(a.next().ok());
  CHECK(same(a.memory.data + big, b.memory.data, big));
  b.client.post_recv(b.qpn, {3, {b.addr(big), big, b.keys.lkey}});
  a.client.post_send(a.qpn, a.wr(SendOpcode::kSend, 4, 0, big, b, 0));
  REQUIRE(a.next().ok());
  REQUIRE(b.next().ok());
  CHECK(same(a.memory.data, b.memory.data + big, big));
}

// With the copy thread on: a peer lost with a copy in it (the hang-up, the connection closed
// under it) is the case CopyEngine::cancel and finish_here exist for.
TEST_CASE("a worker killed mid-transfer gives error completions and the rest keeps working") {
  TestDir dir("kill");
  Supervisor supervisor;
  supervisor.start(mesh_config_with(dir.path(), 3, {"--mesh-copy-thread"}));
  const auto instances = supervisor.instances();
  ShmClient c1(instances[0].socket.string());
  ShmClient c2(instances[1].socket.string());
  auto c3 = std::make_unique<ShmClient>(instances[2].socket.string());
  Endpoint to_victim(c1);
  Endpoint victim(*c3);
  to_victim.connect_to(victim);
  victim.connect_to(to_victim);
  // A long stream of 1 MiB WRITEs, then the target dies under it.
  constexpr int kWrites = 400;
  for (int i = 0; i < 64; ++i) {
    to_victim.client.post_send(
        to_victim.qpn, to_victim.wr(SendOpcode::kRdmaWrite, i, 0, 1u << 20, victim, (i % 8) << 20));
  }
  REQUIRE(to_victim.next().ok());  // traffic is flowing
  kill(instances[2].pid, SIGKILL);
  // The queue is kept full until the first error, so the kill always lands mid-stream, however
  // fast this machine moves the first 64 MiB.
  int errors = 0;
  int outstanding = 63;
  int next_id = 64;
  const auto start = std::chrono::steady_clock::now();
  while (outstanding > 0) {
    const auto c = to_victim.next(10);
    --outstanding;
    if (!c.ok()) {
      ++errors;
    } else if (errors == 0 && next_id < kWrites) {
      to_victim.client.post_send(
          to_victim.qpn,
          to_victim.wr(SendOpcode::kRdmaWrite, next_id, 0, 1u << 20, victim, (next_id % 8) << 20));
      ++next_id;
      ++outstanding;
    }
  }
  CHECK(errors > 0);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  // Posting more now fails at once instead of hanging.
  to_victim.client.post_send(to_victim.qpn,
                             to_victim.wr(SendOpcode::kRdmaWrite, kWrites, 0, 64, victim, 0));
  CHECK_FALSE(to_victim.next(5).ok());
  // Its sockets close a moment before the process becomes reapable.
  std::string death;
  for (int i = 0; i < 100 && death.empty(); ++i) {
    death = supervisor.check_alive();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK_THAT(death, Catch::Contains("instance 3"));
  // Instances 1 and 2 still talk.
  Endpoint a(c1);
  Endpoint b(c2);
  a.connect_to(b);
  b.connect_to(a);
  exchange(a, b, 65536, 9);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK_THAT(read_all(instances[0].log), Catch::Contains("lost node 2"));
}

// A node that takes no lanes (`--mesh-lanes 0`; an older node refuses them the same way)
// refuses every lane a peer dials; the peer keeps its one connection and all its traffic.
TEST_CASE("refused lanes leave the peer connected and its traffic whole") {
  TestDir dir("lanes-refused");
  Supervisor supervisor;
  supervisor.start(mesh_config_with(dir.path(), 1, {"--mesh-lanes", "0"}));
  const auto& manager = supervisor.instances()[0];
  const auto socket = dir.path() / "w.sock";
  const auto log = dir.path() / "w.log";
  const auto stats = dir.path() / "w.stats";
  const pid_t worker = spawn_worker(dir.path(), manager, "w", "10.9.0.2", {"--mesh-lanes", "3"});
  REQUIRE(observe(
      [&] {
        const auto s = Supervisor::read_stats(stats);
        return s.count("mesh_peers") == 1 && s.at("mesh_peers") == "1" &&
               read_all(manager.log).find("has all its 0 lanes") != std::string::npos;
      },
      std::chrono::seconds(15)));
  exchange_between(manager.socket.string(), socket.string(), 21);
  CHECK(Supervisor::read_stats(stats).at("mesh_lanes") == "0");
  CHECK(supervisor.check_alive().empty());
  CHECK(kill(worker, 0) == 0);
  CHECK(read_all(log).find("lost node") == std::string::npos);
  kill(worker, SIGTERM);
  CHECK(wait_exit(worker, std::chrono::seconds(10)) == 0);
}

// Co-located peers skip the loopback TCP stack (mesh_sockets.cc); a peer without a local
// socket (in another network namespace, on another machine, or --mesh-tcp-only here) is
// dialed over TCP as before, and carries the same verified traffic.
TEST_CASE("peers on this machine talk over local sockets, others over TCP") {
  TestDir dir("mesh-local");
  Supervisor supervisor;
  supervisor.start(mesh_config_with(dir.path(), 1, {"--mesh-tcp-only"}));
  const auto& manager = supervisor.instances()[0];
  const pid_t first = spawn_worker(dir.path(), manager, "w1", "10.9.0.2", {"--mesh-copy-thread"});
  const pid_t second = spawn_worker(dir.path(), manager, "w2", "10.9.0.3", {"--mesh-copy-thread"});
  // Each worker: 3 lanes to the manager (TCP: it has no local socket) and, as the lower id,
  // 3 to the other worker (local) or the other worker's 3 (accepted on its local socket).
  const auto lanes_are = [&](const std::string& name, const std::string& all,
                             const std::string& local) {
    const auto s = Supervisor::read_stats(dir.path() / (name + ".stats"));
    return s.count("mesh_local_lanes") == 1 && s.at("mesh_lanes") == all &&
           s.at("mesh_local_lanes") == local && s.at("mesh_peers") == "2";
  };
  REQUIRE(observe([&] { return lanes_are("w1", "6", "3") && lanes_are("w2", "6", "3"); },
                  std::chrono::seconds(15)));
  CHECK(Supervisor::read_stats(manager.stats).at("mesh_local_lanes") == "0");
  // The streams between the workers (their primary connection and its 3 lanes, all local) go
  // through rings (mesh_rings.cc): the memfds below are passed beside a ring, and the copy
  // thread's copies come from frames read out of one. The manager's connections are TCP.
  CHECK(observe([&] { return stat_of(dir.path() / "w1.stats", "mesh_ring_streams") == 4; },
                std::chrono::seconds(5)));
  CHECK(stat_of(manager.stats, "mesh_ring_streams") == 0);
  // The copy thread's instances step back to the batch policy and the kernel's slice when no
  // latency request has passed for a while (none has yet); the others keep the kernel's.
  const auto scheduling_of = [&](const std::filesystem::path& stats) {
    const auto s = Supervisor::read_stats(stats);
    return s.at("loop_scheduling") + " " + s.at("loop_slice_us");
  };
  const std::string kernel_slice = std::to_string(time_slice().count());
  CHECK(observe([&] { return scheduling_of(dir.path() / "w1.stats") == "bulk " + kernel_slice; },
                std::chrono::seconds(5)));
  CHECK(scheduling_of(manager.stats) == "kernel " + kernel_slice);
  const std::string w1 = (dir.path() / "w1.sock").string();
  const std::string w2 = (dir.path() / "w2.sock").string();
  const auto stat = [&](const std::string& name, const std::string& key) {
    return stat_of(dir.path() / (name + ".stats"), key);
  };
  // Local: the 300000-byte SEND and WRITE of w1's client and the READ response from w2's
  // client memory go by reference, checked byte for byte; when the clients go, each side's
  // mapping of the other's memory goes with them.
  exchange_between(w1, w2, 31);
  REQUIRE(observe(
      [&] {
        return stat("w1", "mesh_bytes_by_reference") >= 600000 &&
               stat("w2", "mesh_bytes_by_reference") >= 300000;
      },
      std::chrono::seconds(5)));
  CHECK(observe(
      [&] { return stat("w1", "mesh_peer_regions") + stat("w2", "mesh_peer_regions") == 0; },
      std::chrono::seconds(5)));
  // w1's client posted requests with nothing outstanding: its loop took the short slice again
  // (a second latency period, the start being the first). w2 only served 300000-byte ones,
  // bulk traffic: its loop stayed a batch task.
  CHECK(stat("w1", "loop_latency_periods") >= 2);
  CHECK(stat("w2", "loop_latency_periods") == 1);
  // Each payload (one segment: references go in 1 MiB ones) is longer than a turn: with
  // --mesh-copy-thread the receiver's copy thread placed it (w2 the SEND and the WRITE, w1 the
  // READ response).
  CHECK(observe(
      [&] {
        return stat("w2", "mesh_copies_elsewhere") == 2 && stat("w1", "mesh_copies_elsewhere") == 1;
      },
      std::chrono::seconds(5)));
  const std::uint64_t before = stat("w1", "mesh_bytes_by_reference");
  exchange_between(manager.socket.string(), w1, 32);  // TCP: every byte on the wire
  const auto exchanged = std::filesystem::file_time_type::clock::now();
  REQUIRE(
      observe([&] { return std::filesystem::last_write_time(dir.path() / "w1.stats") > exchanged; },
              std::chrono::seconds(5)));
  CHECK(stat("w1", "mesh_bytes_by_reference") == before);
  CHECK(read_all(dir.path() / "w1.log").find("lost node") == std::string::npos);
  CHECK(supervisor.check_alive().empty());
  for (const pid_t worker : {first, second}) {
    kill(worker, SIGTERM);
    CHECK(wait_exit(worker, std::chrono::seconds(10)) == 0);
  }
}

// By default the event loop copies payloads by reference itself (the test above gives the
// workers --mesh-copy-thread).
TEST_CASE("without the copy thread, payloads by reference arrive whole, copied by the loop") {
  TestDir dir("mesh-copies-in-loop");
  Supervisor supervisor;
  supervisor.start(mesh_config(dir.path(), 1));
  const auto& manager = supervisor.instances()[0];
  const pid_t worker = spawn_worker(dir.path(), manager, "w", "10.9.0.2");
  const auto stats = dir.path() / "w.stats";
  REQUIRE(
      observe([&] { return stat_of(stats, "mesh_local_lanes") == 3; }, std::chrono::seconds(15)));
  exchange_between(manager.socket.string(), (dir.path() / "w.sock").string(), 43);
  REQUIRE(observe([&] { return stat_of(manager.stats, "mesh_bytes_by_reference") >= 600000; },
                  std::chrono::seconds(5)));
  CHECK(stat_of(manager.stats, "mesh_copies_elsewhere") == 0);
  CHECK(stat_of(stats, "mesh_copies_elsewhere") == 0);
  CHECK(supervisor.check_alive().empty());
  kill(worker, SIGTERM);
  CHECK(wait_exit(worker, std::chrono::seconds(10)) == 0);
}

// A node that does not take references (--mesh-payloads-inline, or one that predates them)
// says so in its handshake; a co-located peer then sends it every payload on the wire.
TEST_CASE("a peer that takes no payloads by reference gets them on the wire") {
  TestDir dir("mesh-inline");
  Supervisor supervisor;
  supervisor.start(mesh_config(dir.path(), 1));
  const auto& manager = supervisor.instances()[0];
  const pid_t worker = worker_after_exchange(dir.path(), manager, {"--mesh-payloads-inline"}, 41);
  const auto stats = dir.path() / "w.stats";
  CHECK(stat_of(manager.stats, "mesh_bytes_by_reference") == 0);
  CHECK(stat_of(stats, "mesh_bytes_by_reference") == 0);
  CHECK(stat_of(manager.stats, "mesh_wire_bytes_sent") > 600000);
  CHECK(supervisor.check_alive().empty());
  kill(worker, SIGTERM);
  CHECK(wait_exit(worker, std::chrono::seconds(10)) == 0);
}

TEST_CASE("a wrong token and a wrong protocol version are refused with clear errors") {
  TestDir dir("refuse");
  Supervisor supervisor;
  supervisor.start(mesh_config(dir.path(), 1, "right-token"));
  const auto& manager = supervisor.instances()[0];
  const std::string backend = "tcp:worker:127.0.0.1:" + std::to_string(manager.mesh_port);

  const auto bad_token_log = dir.path() / "bad-token.log";
  CHECK(run_to_exit({"emulator", "--backend", backend, "--socket", (dir.path() / "x.sock").string(),
                     "--token", "wrong-token", "--log-file", bad_token_log.string()},
                    bad_token_log) == 1);
  CHECK_THAT(read_all(bad_token_log), Catch::Contains("tokens differ"));
  CHECK_FALSE(std::filesystem::exists(dir.path() / "x.sock"));

  const auto bad_version_log = dir.path() / "bad-version.log";
  CHECK(run_to_exit({"emulator", "--backend", backend, "--socket", (dir.path() / "y.sock").string(),
                     "--token", "right-token", "--mesh-protocol", "2.0", "--log-file",
                     bad_version_log.string()},
                    bad_version_log) == 1);
  CHECK_THAT(read_all(bad_version_log),
             Catch::Contains("mesh protocol version 2.0 is not supported (this node speaks 1.0)"));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK_THAT(read_all(manager.log), Catch::Contains("mesh protocol version 2.0 is not supported"));
  CHECK(supervisor.check_alive().empty());
}

TEST_CASE("a malformed frame closes that connection and leaves the instance running") {
  TestDir dir("malformed");
  Supervisor supervisor;
  supervisor.start(mesh_config(dir.path(), 2));
  const auto& manager = supervisor.instances()[0];
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(manager.mesh_port);
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  // A header claiming a 2 GiB control payload.
  FrameHeader h;
  h.op = FrameOp::kHello;
  h.payload_length = 0x80000000u;
  const auto bytes = encode_header(h);
  REQUIRE(write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
  char buffer[16];
  CHECK(read(fd, buffer, sizeof buffer) == 0);  // the instance hung up
  close(fd);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK_THAT(read_all(manager.log), Catch::Contains("malformed frame: control frame payload"));
  CHECK(supervisor.check_alive().empty());
  ShmClient c1(manager.socket.string());
  ShmClient c2(supervisor.instances()[1].socket.string());
  Endpoint a(c1);
  Endpoint b(c2);
  a.connect_to(b);
  b.connect_to(a);
  exchange(a, b, 4096, 3);
}

// `ernicctl perf TEST` on `socket`, the client side when `client`; output in dir.
pid_t spawn_perf(const std::filesystem::path& dir, const std::string& test,
                 const std::string& socket, int port, std::vector<std::string> args, bool client) {
  std::vector<std::string> all = {"perf", test, "--socket", socket, "-p", port_for_test(port)};
  all.insert(all.end(), args.begin(), args.end());
  if (client) {
    all.push_back("127.0.0.1");
  }
  return spawn_ernicctl(all, dir / (test + (client ? "-client.txt" : "-server.txt")));
}

// A write_bw 1 MiB for `seconds` from `client`'s instance to `server`'s and, once `bulk_going`
// says it is under way, a send_lat 4 KiB (300 iterations) between the same two; all four
// processes end well.
void latency_beside_bulk(const std::filesystem::path& dir, const InstanceInfo& server,
                         const InstanceInfo& client, int port, const std::string& seconds,
                         const std::function<bool()>& bulk_going) {
  const std::vector<std::string> bulk = {"-s", "1048576", "-D", seconds};
  const pid_t bulk_server = spawn_perf(dir, "write_bw", server.socket.string(), port, bulk, false);
  const pid_t bulk_client = spawn_perf(dir, "write_bw", client.socket.string(), port, bulk, true);
  REQUIRE(observe(bulk_going, std::chrono::seconds(20)));
  const std::vector<std::string> latency = {"-s", "4096", "-n", "300"};
  const pid_t latency_server =
      spawn_perf(dir, "send_lat", server.socket.string(), port + 1, latency, false);
  const pid_t latency_client =
      spawn_perf(dir, "send_lat", client.socket.string(), port + 1, latency, true);
  CHECK(wait_exit(latency_client, std::chrono::seconds(60)) == 0);
  CHECK(wait_exit(latency_server, std::chrono::seconds(10)) == 0);
  CHECK(wait_exit(bulk_client, std::chrono::seconds(60)) == 0);
  CHECK(wait_exit(bulk_server, std::chrono::seconds(10)) == 0);
}

// One connection per peer made a latency test's frames wait behind the bulk bytes another QP
// had put in the kernel's socket buffers (p99 of milliseconds beside one write_bw). Measured in
// bytes, not time: how many bytes went out on a latency frame's connection between its being
// queued and its first byte. Over TCP (between machines): co-located instances send bulk
// payloads by reference, a few bytes each.
TEST_CASE("a QP's latency frames do not queue behind another QP's bulk bytes") {
  TestDir dir("mesh-lanes");
  Supervisor supervisor;
  supervisor.start(mesh_config_with(dir.path(), 2, {"--mesh-tcp-only"}));
  REQUIRE(every_instance_counts(supervisor, "mesh_lanes", 3, std::chrono::seconds(10)));
  const auto& m = supervisor.instances()[0];
  const auto& w = supervisor.instances()[1];
  // The bulk QP sends first, so it has the first lane; the latency QP gets the next one.
  latency_beside_bulk(dir.path(), m, w, 83, "3", [&] {
    const auto stats = Supervisor::read_stats(w.stats);
    return stats.count("mesh_wire_bytes_sent") == 1 &&
           std::stoull(stats.at("mesh_wire_bytes_sent")) > (64u << 20);
  });
  CHECK(supervisor.check_alive().empty());
  supervisor.stop();
  const auto stats = Supervisor::read_stats(w.stats);
  INFO(read_all(w.stats));
  REQUIRE(stats.count("mesh_max_bytes_ahead_of_small_frame") == 1);
  // Within its own QP's window; with one connection it was 0.5-1 MiB of the bulk QP's frames.
  CHECK(std::stoull(stats.at("mesh_max_bytes_ahead_of_small_frame")) < (64u << 10));
}

// By reference a bulk QP puts 64 bytes on the socket per 1 MiB segment, so the socket could
// hold hundreds of segments' copying ahead of another QP's frame on that connection (a latency
// test sharing a lane with write_bw had a typical of 2 ms). The copy window bounds what is sent
// by reference ahead of the peer's kCopied: here everything shares one connection.
TEST_CASE("payloads by reference ahead of the peer's copies stay within the copy window") {
  TestDir dir("mesh-copy-window");
  Supervisor supervisor;
  supervisor.start(mesh_config_with(dir.path(), 3, {"--mesh-lanes", "0"}));
  const auto& m = supervisor.instances()[1];
  const auto& w = supervisor.instances()[2];
  REQUIRE(every_instance_counts(supervisor, "mesh_peers", 2, std::chrono::seconds(10)));
  latency_beside_bulk(dir.path(), m, w, 85, "2",
                      [&] { return stat_of(w.stats, "mesh_bytes_by_reference") > (64u << 20); });
  CHECK(supervisor.check_alive().empty());
  supervisor.stop();
  INFO(read_all(w.stats));
  const std::uint64_t in_flight = stat_of(w.stats, "mesh_max_referenced_in_flight");
  CHECK(in_flight >= (1u << 20));
  CHECK(in_flight <= (3u << 20));  // the 2 MiB window and the segment that filled it
}

}  // namespace
}  // namespace ernic::emu
