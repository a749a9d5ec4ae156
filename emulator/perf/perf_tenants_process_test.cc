// Several load-generator endpoints on one instance at once (scenarios/multi-tenant.yaml): each
// instance hosts a server of one tenant and a client of another, so it receives frames from two
// mesh peers whose payloads interleave.
#include <sys/types.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "supervisor.h"
#include "test_dir.h"
#include "test_process.h"

namespace ernic::emu {
namespace {

struct Tenant {
  int server_instance;  // index into Supervisor::instances()
  int client_instance;
};

TEST_CASE("perf tenants sharing an instance with peers on two others all finish") {
  TestDir dir("perf-tenants");
  Supervisor supervisor;
  start_instances(supervisor, dir.path(), 3, "perf-tenants");
  const auto& instances = supervisor.instances();
  // Instance 1 (a worker) hosts tenant 1's client and tenant 2's server: it receives ACKs from
  // the manager and WRITE segments from the other worker at the same time.
  const std::vector<Tenant> tenants = {{0, 1}, {1, 2}};
  const std::string size = "65536";
  const std::uint64_t iterations = 2000;
  std::vector<pid_t> servers;
  std::vector<pid_t> clients;
  std::vector<std::string> ports;
  for (std::size_t t = 0; t < tenants.size(); ++t) {
    ports.push_back(port_for_test(70 + static_cast<int>(t)));
    const auto& socket = instances[tenants[t].server_instance].socket;
    servers.push_back(spawn_ernicctl({"perf", "write_bw", "--socket", socket.string(), "-p",
                                      ports[t], "-s", size, "-n", std::to_string(iterations)},
                                     dir.path() / ("server" + std::to_string(t) + ".txt")));
  }
  for (std::size_t t = 0; t < tenants.size(); ++t) {
    const auto& socket = instances[tenants[t].client_instance].socket;
    const auto json = dir.path() / ("client" + std::to_string(t) + ".json");
    // The client retries its connection until the server listens.
    clients.push_back(
        spawn_ernicctl({"perf", "write_bw", "--socket", socket.string(), "-p", ports[t], "-s", size,
                        "-n", std::to_string(iterations), "--json", json.string(), "127.0.0.1"},
                       dir.path() / ("client" + std::to_string(t) + ".txt")));
  }
  const auto started = std::chrono::steady_clock::now();
  for (std::size_t t = 0; t < tenants.size(); ++t) {
    const int client_status = wait_exit(clients[t], std::chrono::seconds(60));
    const int server_status = wait_exit(servers[t], std::chrono::seconds(10));
    INFO("tenant " << t + 1 << ": "
                   << read_all(dir.path() / ("client" + std::to_string(t) + ".txt")));
    CHECK(client_status == 0);
    CHECK(server_status == 0);
  }
  // 2 x 131 MB through loopback TCP: seconds, never the 60 s completion timeout.
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(30));
  for (std::size_t t = 0; t < tenants.size(); ++t) {
    INFO("tenant " << t + 1);
    const auto doc =
        nlohmann::json::parse(read_all(dir.path() / ("client" + std::to_string(t) + ".json")));
    REQUIRE(doc["results"].size() == 1);
    const auto& result = doc["results"][0];
    CHECK(result["iterations"] == iterations);
    // Loopback moves GB/s; a stalled or crawling tenant stays far below 10 MB/s.
    CHECK(result["bw_average_bytes_per_second"].get<double>() > 10e6);
  }
  CHECK(supervisor.check_alive().empty());
  CHECK(supervisor.check_mesh().empty());
}

std::uint64_t stat(const std::filesystem::path& file, const std::string& key) {
  const auto stats = Supervisor::read_stats(file);
  const auto it = stats.find(key);
  return it == stats.end() ? 0 : std::stoull(it->second);
}

// Issue 12 item 7: a latency test beside bulk WRITEs waited milliseconds because an instance
// read one connection for up to 16 MiB (and wrote one until EAGAIN) before it served anything
// else, and 1 MiB of other QPs' frames was committed ahead of every new frame. Asserted in
// bytes (the instance's counters), not in time, so a loaded machine cannot make it flaky. Over
// TCP, as between machines: co-located instances send bulk payloads by reference, so their
// wire bytes would not exercise the bounds.
TEST_CASE("perf latency tenant beside a bulk tenant waits behind a bounded number of bytes") {
  TestDir dir("perf-interleave");
  Supervisor supervisor;
  start_instances(supervisor, dir.path(), 2, "perf-interleave", {"--mesh-tcp-only"});
  const auto& instances = supervisor.instances();
  const std::string bulk_port = port_for_test(80);
  const std::string lat_port = port_for_test(81);
  // Both clients on the worker, both servers on the manager: the latency SENDs share the mesh
  // connection with the bulk WRITE segments, and the manager reads both from it.
  const auto on = [&](int instance, std::vector<std::string> args) {
    args.insert(args.begin() + 2, {"--socket", instances[instance].socket.string()});
    return args;
  };
  const pid_t bulk_server =
      spawn_ernicctl(on(0, {"perf", "write_bw", "-p", bulk_port, "-s", "1048576", "-n", "3000"}),
                     dir.path() / "bulk-server.txt");
  const pid_t bulk_client = spawn_ernicctl(
      on(1, {"perf", "write_bw", "-p", bulk_port, "-s", "1048576", "-n", "3000", "127.0.0.1"}),
      dir.path() / "bulk-client.txt");
  // The latency test starts once the bulk WRITEs are on the wire.
  REQUIRE(observe([&] { return stat(instances[1].stats, "mesh_wire_bytes_sent") > (8u << 20); },
                  std::chrono::seconds(30)));
  const pid_t lat_server =
      spawn_ernicctl(on(0, {"perf", "send_lat", "-p", lat_port, "-s", "4096", "-n", "1000"}),
                     dir.path() / "lat-server.txt");
  const auto lat_json = dir.path() / "lat.json";
  const pid_t lat_client =
      spawn_ernicctl(on(1, {"perf", "send_lat", "-p", lat_port, "-s", "4096", "-n", "1000",
                            "--json", lat_json.string(), "127.0.0.1"}),
                     dir.path() / "lat-client.txt");
  CHECK(wait_exit(lat_client, std::chrono::seconds(60)) == 0);
  CHECK(wait_exit(lat_server, std::chrono::seconds(10)) == 0);
  CHECK(wait_exit(bulk_client, std::chrono::seconds(60)) == 0);
  CHECK(wait_exit(bulk_server, std::chrono::seconds(10)) == 0);
  INFO(read_all(dir.path() / "lat-client.txt") << read_all(dir.path() / "bulk-client.txt"));
  const auto lat = nlohmann::json::parse(read_all(lat_json))["results"][0];
  CHECK(lat["iterations"] == 1000);
  // The counters as of after both tenants: the stats file is rewritten every second.
  const auto finished = std::filesystem::file_time_type::clock::now();
  for (const auto& instance : instances) {
    REQUIRE(observe([&] { return std::filesystem::last_write_time(instance.stats) > finished; },
                    std::chrono::seconds(10)));
  }
  // One turn reads at most its 128 KiB budget (and the next frame's 48-byte header riding along)
  // and writes at most the budget; a small frame finds at most the 256 KiB window ahead of it,
  // the one frame that overshoots it (default 256 KiB segments) and the few control frames and
  // small frames that also go first (heartbeats, ACKs): a small frame of an idle QP goes next
  // in the rotation.
  constexpr std::uint64_t kSegment = (256u << 10) + 48;
  constexpr std::uint64_t kBudget = 128u << 10;
  constexpr std::uint64_t kWindow = 256u << 10;
  for (const auto& instance : instances) {
    INFO(read_all(instance.stats));
    CHECK(stat(instance.stats, "mesh_max_read_turn_bytes") <= kBudget + 48);
    CHECK(stat(instance.stats, "mesh_max_write_turn_bytes") <= kBudget);
    CHECK(stat(instance.stats, "mesh_max_bytes_ahead_of_small_frame") <= kWindow + kSegment + 4096);
  }
  // The bounds were exercised: the bulk data went through the worker's writes and the
  // manager's reads in full turns.
  CHECK(stat(instances[0].stats, "mesh_wire_bytes_received") > (3000ull << 20));
  CHECK(stat(instances[0].stats, "mesh_max_read_turn_bytes") >= kBudget);
  CHECK(stat(instances[1].stats, "mesh_max_write_turn_bytes") == kBudget);
}

}  // namespace
}  // namespace ernic::emu
