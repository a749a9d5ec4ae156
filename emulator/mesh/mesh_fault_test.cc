// Faults a hostile environment inflicts on real instances: load generators killed in the
// middle of large transfers, an instance frozen past the heartbeat timeout.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <fstream>
#include <functional>
#include <random>
#include <thread>

#include "mesh/mesh_test_support.h"
#include "supervisor.h"
#include "test_dir.h"
#include "test_process.h"

namespace ernic::emu {
namespace {

using namespace std::chrono_literals;

// Polls `done` (an observation of another process) until it holds or `limit` passes.
bool wait_until(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) {
      return false;
    }
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

// Client memory an instance has mapped (ShmClient names its memfds "ernic-buffer").
int client_mappings(pid_t instance) {
  std::ifstream maps("/proc/" + std::to_string(instance) + "/maps");
  int count = 0;
  for (std::string line; std::getline(maps, line);) {
    count += line.find("memfd:ernic-buffer") != std::string::npos ? 1 : 0;
  }
  return count;
}

// Payload bytes an instance's engine sent and received (its stats file, rewritten every second;
// co-located instances move payloads by reference, not through system calls).
std::uint64_t payload_bytes(const std::filesystem::path& stats) {
  const auto counters = Supervisor::read_stats(stats);
  std::uint64_t total = 0;
  for (const char* key : {"bytes_sent", "bytes_received"}) {
    if (auto it = counters.find(key); it != counters.end()) {
      total += std::stoull(it->second);
    }
  }
  return total;
}

// Kills and reaps a process the test started unless the test already reaped it.
struct Reaper {
  ~Reaper() {
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
  // SIGKILL now; returns the wait status.
  int kill_now() {
    int status = 0;
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    pid = 0;
    return status;
  }
  pid_t pid;
};

// Another client's WRITEs, in flight across the same mesh connection while a generator dies.
struct Bystander {
  static constexpr int kWrites = 8;
  static constexpr std::uint32_t kSize = 1u << 20;
  void post(unsigned seed) {
    fill(a.memory.data, kSize, seed);
    for (int i = 0; i < kWrites; ++i) {
      a.client.post_send(a.qpn, a.wr(SendOpcode::kRdmaWrite, i, 0, kSize, b, (i + 1) * kSize));
    }
  }
  void check() {
    for (int i = 0; i < kWrites; ++i) {
      ShmClient::Completion c;
      const auto deadline = std::chrono::steady_clock::now() + 10s;
      while (a.client.poll_cq(a.cq, {&c, 1}) == 0) {
        if (std::chrono::steady_clock::now() > deadline) {
          FAIL("bystander WRITE " << i << " never completed; manager:"
                                  << Supervisor::tail(s.instances()[0].log, 12)
                                  << "\nworker:" << Supervisor::tail(s.instances()[1].log, 12));
        }
        a.client.wait(std::chrono::microseconds(10), std::chrono::milliseconds(200));
      }
      REQUIRE(c.ok());
    }
    for (int i = 0; i < kWrites; ++i) {
      CHECK(same(a.memory.data, b.memory.data + (i + 1) * kSize, kSize));
    }
  }
  const Supervisor& s;
  Endpoint& a;
  Endpoint& b;
};

// One round: a perf pair runs `test` with large messages; once both sides registered their
// memory (the transfer starts as soon as their QPs connect) one of them is SIGKILLed at a
// random moment, then the other.
void kill_generator(const Supervisor& s, const std::filesystem::path& dir, const char* test,
                    bool kill_client, int round, Bystander& bystander) {
  const pid_t manager = s.instances()[0].pid;
  const pid_t worker = s.instances()[1].pid;
  const int base_manager = client_mappings(manager);
  const int base_worker = client_mappings(worker);
  const std::string port = port_for_test(100 + round);
  const std::vector<std::string> common = {"-p", port, "-s", "2097152", "-n", "20000"};
  std::vector<std::string> server_args = {"perf", test, "--socket", s.instances()[0].socket};
  server_args.insert(server_args.end(), common.begin(), common.end());
  std::vector<std::string> client_args = {"perf", test, "--socket", s.instances()[1].socket};
  client_args.insert(client_args.end(), common.begin(), common.end());
  client_args.push_back("127.0.0.1");
  std::filesystem::remove(dir / "server.txt");
  std::filesystem::remove(dir / "client.txt");
  Reaper server{spawn_ernicctl(server_args, dir / "server.txt")};
  Reaper client{spawn_ernicctl(client_args, dir / "client.txt")};
  if (!wait_until(
          [&] {
            return client_mappings(manager) > base_manager && client_mappings(worker) > base_worker;
          },
          20s)) {
    FAIL("the perf pair never attached; server:\n"
         << read_all(dir / "server.txt") << "\nclient:\n"
         << read_all(dir / "client.txt")
         << "\nmanager log:" << Supervisor::tail(s.instances()[0].log, 10)
         << "\nworker log:" << Supervisor::tail(s.instances()[1].log, 10));
  }
  // The generators' QPs connect after that; the transfer is under way once the mesh moves
  // several MiB.
  const auto moved = [&] {
    return payload_bytes(s.instances()[0].stats) + payload_bytes(s.instances()[1].stats);
  };
  const std::uint64_t before = moved();
  REQUIRE(wait_until([&] { return moved() > before + (16u << 20); }, 20s));
  bystander.post(static_cast<unsigned>(round));
  static std::mt19937 random(std::random_device{}());
  std::this_thread::sleep_for(std::chrono::milliseconds(random() % 20));
  Reaper& victim = kill_client ? client : server;
  Reaper& other = kill_client ? server : client;
  CHECK(WIFSIGNALED(victim.kill_now()));  // still transferring when it died, not finished
  other.kill_now();
  bystander.check();
  // The instances let go of the dead clients' memory once nothing uses it any more.
  REQUIRE(wait_until(
      [&] {
        return client_mappings(manager) == base_manager && client_mappings(worker) == base_worker;
      },
      10s));
}

TEST_CASE("a load generator killed mid-transfer leaves both instances and the mesh up") {
  TestDir dir("kill-generator");
  Supervisor supervisor;
  // payload_bytes() follows the counters closely.
  supervisor.start(mesh_config_with(dir.path(), 2, {"--stats-interval-ms", "20"}));
  ShmClient manager(supervisor.instances()[0].socket.string());
  ShmClient worker(supervisor.instances()[1].socket.string());
  EndpointPair pair(manager, worker);
  Bystander bystander{supervisor, pair.a, pair.b};
  // Its first WRITEs give the peer instance a mapping of its memory (payloads by reference),
  // which then stays: before the rounds, so that each round's count of mappings includes it.
  bystander.post(0);
  bystander.check();
  int round = 0;
  for (const char* test : {"write_bw", "read_bw", "send_bw"}) {
    for (bool kill_client : {true, false}) {
      for (int i = 0; i < 10; ++i, ++round) {
        INFO(test << (kill_client ? ": client" : ": server") << " killed, round " << i);
        kill_generator(supervisor, dir.path(), test, kill_client, round, bystander);
        REQUIRE(supervisor.check_alive().empty());
      }
    }
  }
  CHECK(supervisor.check_mesh().empty());
  for (const auto& instance : supervisor.instances()) {
    const std::string log = read_all(instance.log);
    CHECK_THAT(log, !Catch::Contains("lost node") && !Catch::Contains("Bad address"));
  }
  CHECK(perf_passes(supervisor, dir.path(), 1));
  exchange(pair.a, pair.b, 300000, 5);
  CHECK(supervisor.check_alive().empty());
}

// Waits until the supervisor reports an instance gone and returns what it said.
std::string wait_for_exit(Supervisor& s, std::chrono::milliseconds limit) {
  std::string gone;
  wait_until(
      [&] {
        gone = s.check_alive();
        return !gone.empty();
      },
      limit);
  return gone;
}

SupervisorConfig short_heartbeat(const std::filesystem::path& dir) {
  return mesh_config_with(dir, 2, {"--heartbeat-timeout-ms", "1500"});
}

TEST_CASE("a frozen instance recovers or is declared lost, and nothing crashes") {
  TestDir dir("freeze");
  Supervisor supervisor;
  supervisor.start(short_heartbeat(dir.path()));
  const auto manager = supervisor.instances()[0];
  const auto worker = supervisor.instances()[1];

  SECTION("a pause shorter than the timeout goes unnoticed") {
    kill(worker.pid, SIGSTOP);
    std::this_thread::sleep_for(300ms);  // the fault itself: a 300 ms freeze
    kill(worker.pid, SIGCONT);
    exchange_between(manager.socket.string(), worker.socket.string(), 1);
    CHECK(supervisor.check_alive().empty());
    CHECK(supervisor.check_mesh().empty());
  }

  SECTION("a worker frozen past the timeout is lost; it leaves when it wakes") {
    kill(worker.pid, SIGSTOP);
    REQUIRE(wait_until([&] { return !supervisor.check_mesh().empty(); }, 10s));
    CHECK_THAT(supervisor.check_mesh(), Catch::Contains("instance 1 (manager"));
    kill(worker.pid, SIGCONT);
    const std::string gone = wait_for_exit(supervisor, 10s);
    CHECK_THAT(gone, Catch::Contains("instance 2 (worker") &&
                         Catch::Contains("exited with status 1") &&
                         Catch::Contains("lost the manager"));
    CHECK_THAT(read_all(manager.log), Catch::Contains("lost node 1: no heartbeat for 1500 ms"));
    // The manager carries on: a new client gets a working device.
    exchange_between(manager.socket.string(), manager.socket.string(), 2);
    CHECK(supervisor.check_alive().empty());
  }

  SECTION("a frozen manager is lost to its worker and finds itself alone when it wakes") {
    kill(manager.pid, SIGSTOP);
    const std::string gone = wait_for_exit(supervisor, 10s);
    CHECK_THAT(gone, Catch::Contains("instance 2 (worker") &&
                         Catch::Contains("exited with status 1") &&
                         Catch::Contains("no heartbeat for 1500 ms"));
    kill(manager.pid, SIGCONT);
    CHECK(wait_until(
        [&] {
          const std::string log = read_all(manager.log);
          return log.find("was frozen for") != std::string::npos &&
                 log.find("lost node 1") != std::string::npos;
        },
        10s));
    exchange_between(manager.socket.string(), manager.socket.string(), 3);
    CHECK(supervisor.check_alive().empty());
  }
}

}  // namespace
}  // namespace ernic::emu
