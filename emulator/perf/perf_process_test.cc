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

#include "supervisor.h"
#include "test_dir.h"
#include "test_process.h"

namespace ernic::emu {
namespace {

std::string port_for_test(int offset) {
  return std::to_string(20000 + (getpid() * 7 + offset) % 20000);
}

TEST_CASE("perf server and client print perftest's table and verify every byte") {
  TestDir dir("perf");
  Supervisor supervisor;
  SupervisorConfig config;
  config.executable = ERNIC_BINARY;
  config.instances = 2;
  config.token = "perf-test";
  config.dir = dir.path();
  supervisor.start(config);
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
    CHECK(doc["results"][0]["bytes"] == std::stoull(c.size));
    CHECK(doc["verify"] == true);
  }
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
