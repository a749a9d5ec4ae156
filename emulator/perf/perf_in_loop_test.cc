// `ernicctl perf --in-loop`: each load generator runs its own instance (a manager and a
// worker) in its own loop, so a test is two processes with no instance of their own to attach to.
#include <catch2/catch.hpp>

#include <chrono>
#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_dir.h"
#include "test_process.h"

namespace ernic::emu {
namespace {

struct Sides {
  std::vector<std::string> server;
  std::vector<std::string> client;
};

// The two command lines of `test` with `args`; each side's instance is in its own process.
Sides in_loop_pair(const std::string& test, const std::vector<std::string>& args, int offset) {
  const std::string mesh_port = port_for_test(offset);
  const std::string oob_port = port_for_test(offset + 1);
  Sides s;
  s.server = {"perf",  test,       "--in-loop", "tcp:manager:listen:" + mesh_port,
              "--gid", "10.8.0.1", "--token",   "in-loop",
              "-p",    oob_port};
  s.client = {"perf",  test,       "--in-loop", "tcp:worker:127.0.0.1:" + mesh_port,
              "--gid", "10.8.0.2", "--token",   "in-loop",
              "-p",    oob_port};
  for (auto* side : {&s.server, &s.client}) {
    side->insert(side->end(), args.begin(), args.end());
  }
  return s;
}

}  // namespace

TEST_CASE(
    "perf --in-loop runs perftest's tests between two load generators that are their own "
    "instances, and verifies every byte") {
  TestDir dir("perf-in-loop");
  struct Case {
    const char* test;
    const char* size;
    const char* header;
  };
  const Case cases[] = {{"send_lat", "4096", "t_typical[usec]"},
                        {"write_bw", "300000", "BW average[MB/sec]"},
                        {"read_lat", "65536", "t_typical[usec]"},
                        {"send_bw", "65536", "BW average[MB/sec]"}};
  int offset = 320;
  for (const auto& c : cases) {
    INFO(c.test);
    const auto json = dir.path() / (std::string(c.test) + ".json");
    Sides sides = in_loop_pair(c.test, {"-s", c.size, "-n", "50", "--verify"}, offset);
    offset += 2;
    sides.client.insert(sides.client.end(), {"--json", json.string(), "127.0.0.1"});
    const auto client_output = dir.path() / (std::string(c.test) + ".client.txt");
    const pid_t server =
        spawn_ernicctl(sides.server, dir.path() / (std::string(c.test) + ".server.txt"));
    const pid_t client = spawn_ernicctl(sides.client, client_output);
    CHECK(wait_exit(client, std::chrono::seconds(60)) == 0);
    CHECK(wait_exit(server, std::chrono::seconds(10)) == 0);
    const std::string out = read_all(client_output);
    INFO(out);
    CHECK_THAT(out, Catch::Contains(c.header));
    CHECK(
        std::regex_search(out, std::regex(std::string("\n ") + c.size + " +50 +[0-9.]+ +[0-9.]+")));
    const auto doc = nlohmann::json::parse(read_all(json));
    REQUIRE(doc["results"].size() == 1);
    const auto& cpu = doc["results"][0]["cpu"];
    // The instance's CPU is this process's: counted once, as the load generator's.
    CHECK(cpu["load_generator_percent"].get<double>() > 0);
    CHECK(cpu["instance_percent"].get<double>() == 0);
    CHECK(cpu["instance_context_switches"].is_null());
  }
}

TEST_CASE("perf --in-loop names what is missing, and a manager that is not there") {
  TestDir dir("perf-in-loop-errors");
  const auto run = [&dir](std::vector<std::string> args) {
    const auto out = dir.path() / "out.txt";
    std::filesystem::remove(out);
    const int status = wait_exit(spawn_ernicctl(args, out), std::chrono::seconds(30));
    return std::pair(status, read_all(out));
  };
  auto [status, out] =
      run({"perf", "send_lat", "--in-loop", "tcp:manager:listen:1", "--token", "t"});
  CHECK(status == 2);
  CHECK_THAT(out, Catch::Contains("--in-loop needs --gid"));
  std::tie(status, out) = run({"perf", "send_lat", "--in-loop", "loopback", "--gid", "10.8.1.1"});
  CHECK(status == 2);
  CHECK_THAT(out, Catch::Contains("needs a mesh backend"));
  std::tie(status, out) =
      run({"perf", "send_lat", "--socket", "/nonexistent", "--in-loop", "tcp:manager:listen:1"});
  CHECK(status == 2);
  CHECK_THAT(out, Catch::Contains("instead of --socket"));
  Sides sides = in_loop_pair("send_lat", {}, 330);
  sides.client.push_back("127.0.0.1");
  std::tie(status, out) = run(sides.client);  // no server, and no manager
  CHECK(status == 1);
  CHECK_THAT(out, Catch::Contains("cannot join the manager"));
}

}  // namespace ernic::emu
