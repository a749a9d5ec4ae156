// Several load-generator endpoints on one instance at once (scenarios/multi-tenant.yaml): each
// instance hosts a server of one tenant and a client of another, so it receives frames from two
// mesh peers whose payloads interleave.
#include <sys/types.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <string>
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

}  // namespace
}  // namespace ernic::emu
