// `ernicctl perf` as the orchestrator runs it: server and client processes attached to a
// manager and a worker.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <fstream>
#include <regex>
#include <thread>

#include <nlohmann/json.hpp>

#include "perf/perftest_format.h"
#include "supervisor.h"
#include "test_dir.h"
#include "test_process.h"

namespace ernic::emu {
namespace {

void start_pair(Supervisor& supervisor, const TestDir& dir) {
  SupervisorConfig config;
  config.executable = ERNIC_BINARY;
  config.instances = 2;
  config.token = "perf-test";
  config.dir = dir.path();
  supervisor.start(config);
}

// Runs one test as server (on the manager) and client (on the worker); returns the client's
// JSON document. `args` are given to both sides.
nlohmann::json run_pair(const Supervisor& supervisor, const TestDir& dir, const std::string& test,
                        std::vector<std::string> args, int port_offset) {
  const std::string port = port_for_test(port_offset);
  const auto json = dir.path() / (test + ".json");
  std::vector<std::string> server_args = {
      "perf", test, "--socket", supervisor.instances()[0].socket.string(), "-p", port};
  server_args.insert(server_args.end(), args.begin(), args.end());
  std::vector<std::string> client_args = {
      "perf", test, "--socket", supervisor.instances()[1].socket.string(), "-p", port};
  client_args.insert(client_args.end(), args.begin(), args.end());
  client_args.insert(client_args.end(), {"--json", json.string(), "127.0.0.1"});
  const pid_t server = spawn_ernicctl(server_args, dir.path() / (test + ".server.txt"));
  const pid_t client = spawn_ernicctl(client_args, dir.path() / (test + ".client.txt"));
  const int client_status = wait_exit(client, std::chrono::seconds(60));
  const int server_status = wait_exit(server, std::chrono::seconds(10));
  INFO(read_all(dir.path() / (test + ".client.txt")));
  REQUIRE(client_status == 0);
  REQUIRE(server_status == 0);
  return nlohmann::json::parse(read_all(json));
}

// Sets an environment variable for the processes a test starts, and restores it.
struct ScopedEnv {
  ScopedEnv(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~ScopedEnv() { unsetenv(name_); }
  const char* name_;
};

TEST_CASE("perf server and client print perftest's table and verify every byte") {
  TestDir dir("perf");
  Supervisor supervisor;
  start_pair(supervisor, dir);
  const auto& m = supervisor.instances()[0];
  const auto& w = supervisor.instances()[1];
  struct Case {
    const char* test;
    const char* size;
    const char* header;
  };
  const Case cases[] = {{"write_bw", "300000", "BW average[Gb/sec]"},
                        {"send_lat", "4096", "t_typical[usec]"},
                        {"read_bw", "65536", "BW average[Gb/sec]"}};
  int offset = 0;
  for (const auto& c : cases) {
    INFO(c.test);
    const std::string port = port_for_test(offset++);
    const auto json = dir.path() / (std::string(c.test) + ".json");
    const pid_t server = spawn_ernicctl({"perf", c.test, "--socket", m.socket.string(), "-p", port,
                                         "-s", c.size, "-n", "50", "--report_gbits", "--verify"},
                                        dir.path() / "server.txt");
    const pid_t client = spawn_ernicctl(
        {"perf", c.test, "--socket", w.socket.string(), "-p", port, "-s", c.size, "-n", "50",
         "--report_gbits", "--verify", "--json", json.string(), "127.0.0.1"},
        dir.path() / "client.txt");
    CHECK(wait_exit(client, std::chrono::seconds(60)) == 0);
    CHECK(wait_exit(server, std::chrono::seconds(10)) == 0);
    const std::string out = read_all(dir.path() / "client.txt");
    CHECK_THAT(out, Catch::Contains(c.header));
    CHECK(
        std::regex_search(out, std::regex(std::string("\n ") + c.size + " +50 +[0-9.]+ +[0-9.]+")));
    CHECK_THAT(read_all(dir.path() / "server.txt"),
               Catch::Contains("Waiting for client to connect"));
    const auto doc = nlohmann::json::parse(read_all(json));
    REQUIRE(doc["results"].size() == 1);
    const auto& result = doc["results"][0];
    CHECK(result["bytes"] == std::stoull(c.size));
    CHECK(doc["verify"] == true);
    CHECK(result["cpu"]["wall_seconds"].get<double>() > 0);
    CHECK(result["cpu"]["load_generator_percent"].get<double>() >= 0);
    if (result.contains("bw_peak_bytes_per_second")) {
      // 50 completions are fewer than two windows of the 128-deep send queue: no peak.
      CHECK(result["bw_peak_bytes_per_second"] == result["bw_average_bytes_per_second"]);
    }
  }
  CHECK(supervisor.check_alive().empty());
}

TEST_CASE("perf bandwidth peak is the best window of a long enough run, never below the average") {
  TestDir dir("perf-peak");
  Supervisor supervisor;
  start_pair(supervisor, dir);
  // 600 completions, windows of 128: peak and average are different figures.
  const auto doc = run_pair(supervisor, dir, "write_bw", {"-s", "65536", "-n", "600"}, 31);
  const auto& result = doc["results"][0];
  REQUIRE(result["completion_times_usec"].size() == 600);
  const double peak = result["bw_peak_bytes_per_second"].get<double>();
  const double average = result["bw_average_bytes_per_second"].get<double>();
  CHECK(peak > average);
  // The figure printed is the one the recorded post and completion times give.
  const auto posted = result["post_times_usec"].get<std::vector<double>>();
  const auto completed = result["completion_times_usec"].get<std::vector<double>>();
  REQUIRE(posted.size() == 600);
  std::size_t completed_before_posted = 0;
  for (std::size_t i = 0; i < posted.size(); ++i) {
    completed_before_posted += completed[i] < posted[i] ? 1 : 0;
  }
  CHECK(completed_before_posted == 0);
  CHECK(peak == Approx(perf::peak_bytes_per_second(posted, completed, 65536, 128)));
}

// write_lat waits for the peer's RDMA WRITE by watching memory. With the spin window at 0 the
// client blocks at once on every iteration, so each one needs the instance to wake it when the
// WRITE lands; a missed wake-up would cost a second (the client's poll cap) per iteration.
TEST_CASE("write_lat blocks until the instance signals the WRITE, and verifies its data") {
  TestDir dir("perf-write-lat");
  Supervisor supervisor;
  start_pair(supervisor, dir);
  ScopedEnv no_spin("ERNIC_PERF_SPIN_US", "0");
  const auto doc =
      run_pair(supervisor, dir, "write_lat", {"-s", "4096", "-n", "200", "--verify"}, 37);
  CHECK(doc["verify"] == true);
  const auto& result = doc["results"][0];
  CHECK(result["latency_usec"].size() == 200);
  CHECK(result["t_typical_usec"].get<double>() < 100000);
  CHECK(result["t_max_usec"].get<double>() < 900000);
  CHECK(supervisor.check_alive().empty());
}

TEST_CASE("perf without a server fails like perftest") {
  TestDir dir("perf-noserver");
  Supervisor supervisor;
  SupervisorConfig config;
  config.executable = ERNIC_BINARY;
  config.instances = 1;
  config.token = "perf-test";
  config.dir = dir.path();
  supervisor.start(config);
  const std::string port = port_for_test(17);
  const pid_t client =
      spawn_ernicctl({"perf", "send_bw", "--socket", supervisor.instances()[0].socket.string(),
                      "-p", port, "127.0.0.1"},
                     dir.path() / "client.txt");
  CHECK(wait_exit(client, std::chrono::seconds(20)) == 1);
  CHECK_THAT(read_all(dir.path() / "client.txt"),
             Catch::Contains("Couldn't connect to 127.0.0.1:" + port));
  const pid_t orphan = spawn_ernicctl(
      {"perf", "send_bw", "--socket", (dir.path() / "none.sock").string(), "-p", port, "127.0.0.1"},
      dir.path() / "orphan.txt");
  CHECK(wait_exit(orphan, std::chrono::seconds(20)) == 1);
  CHECK_THAT(read_all(dir.path() / "orphan.txt"), Catch::Contains("none.sock"));
}

// perftest opens its device before it waits: a server given a wrong socket must fail at once
// rather than wait for a client (its 10 x --timeout accept wait would outlast the test).
TEST_CASE("perf server with no instance at its socket fails before waiting for a client") {
  TestDir dir("perf-nosocket");
  const pid_t server =
      spawn_ernicctl({"perf", "write_bw", "--socket", (dir.path() / "none.sock").string(), "-p",
                      port_for_test(23)},
                     dir.path() / "server.txt");
  CHECK(wait_exit(server, std::chrono::seconds(20)) == 1);
  const std::string output = read_all(dir.path() / "server.txt");
  CHECK_THAT(output, Catch::Contains("cannot attach to the ERNIC instance"));
  CHECK_THAT(output, Catch::Contains("none.sock"));
  CHECK_FALSE(output.find("Waiting for client") != std::string::npos);
}

}  // namespace
}  // namespace ernic::emu
