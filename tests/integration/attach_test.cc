// The developer's loop through the binary: `up` once, `run --attach` many times against it
// (nothing created or removed, every sample warm, records that point at the up run), an
// instance killed between two attached runs, `up --restart-instances`, and `down`.
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ernicctl_runner.h"

namespace {
namespace fs = std::filesystem;
using Catch::Contains;
using nlohmann::json;

const char* kScenario = R"(version: 1
name: attach
emulator: {kind: embedded, instances: 2}
hosts:
  - {name: guest1, provider: embedded, instance: 1}
  - {name: guest2, provider: embedded, instance: 2}
  - {name: server, provider: netns}
  - {name: client, provider: netns}
netns: {subnet: 10.81.0.0/24}
benchmarks:
  - {name: bw, tool: perftest, server: guest1, client: guest2, timeout: 30s,
     params: {verb: [send, write], mode: bw, size: 64KiB, iterations: 200}}
  - {name: tcp, tool: iperf3, server: server, client: client, timeout: 30s,
     params: {duration: 1s}}
history: {enabled: true}
)";

std::vector<json> history_records(const fs::path& file) {
  std::vector<json> records;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) {
      records.push_back(json::parse(line));
    }
  }
  return records;
}

std::vector<std::string> namespaces_of(const std::string& token) {
  std::vector<std::string> found;
  for (const auto& name : namespaces()) {
    if (name.starts_with("ernic-" + token + "-")) {
      found.push_back(name);
    }
  }
  return found;
}

std::vector<long> instance_pids(const json& state) {
  std::vector<long> pids;
  for (const auto& instance : state["instances"]) {
    pids.push_back(instance["pid"].get<long>());
  }
  return pids;
}

// Whatever a failed assertion left up is taken down at the end of the test.
struct DownAtExit {
  std::string state_dir;
  ~DownAtExit() { run_ernicctl({"down", "--state-dir", state_dir}); }
};

json read_json(const fs::path& file) {
  std::ifstream in(file);
  return json::parse(in);
}

}  // namespace

TEST_CASE("up once, run --attach three times, a dead instance, restart, down") {
  auto dir = fresh_dir("attach");
  const std::string scenario = (dir / "attach.yaml").string();
  std::ofstream(scenario) << kScenario;
  const std::string state_dir = (dir / "state").string();
  const std::string history = (dir / "history.jsonl").string();
  DownAtExit down_at_exit{state_dir};
  auto attached_run = [&] {
    return run_ernicctl({"run", scenario, "--attach", "--state-dir", state_dir, "--runs-dir",
                         (dir / "runs").string(), "--set", "history.path=" + history});
  };

  const Invocation up = run_ernicctl(
      {"up", scenario, "--state-dir", state_dir, "--runs-dir", (dir / "runs").string()});
  INFO(up.out << up.err);
  REQUIRE(up.exit_code == 0);
  CHECK_THAT(up.out, Contains("ernicctl run " + scenario + " --attach --state-dir " + state_dir));
  const json state = read_json(fs::path(state_dir) / "up.json");
  const std::string token = state["run_token"].get<std::string>();
  const std::vector<std::string> namespaces_up = namespaces_of(token);
  const std::vector<long> pids = instance_pids(state);
  REQUIRE(namespaces_up.size() == 2);
  REQUIRE(pids.size() == 2);
  const std::string socket_dir = "/tmp/ernic-" + token + "/";

  for (int round = 1; round <= 3; ++round) {
    INFO("attached run " << round);
    const Invocation run = attached_run();
    INFO(run.out << run.err);
    CHECK(run.exit_code == 0);
    // Nothing created, nothing removed: the same namespaces and the same two instances.
    CHECK(namespaces_of(token) == namespaces_up);
    CHECK(count_processes_mentioning(socket_dir) == 2);
    for (long pid : pids) {
      CHECK(::kill(static_cast<pid_t>(pid), 0) == 0);
    }
  }
  const std::vector<json> records = history_records(history);
  REQUIRE(records.size() == 3);
  for (const auto& record : records) {
    const json& part = record["ernicctl"];
    CHECK(part["status"] == "passed");
    CHECK(part["attached_to"]["up_run_token"] == token);
    CHECK(part["attached_to"]["up_run_dir"] == state["run_dir"]);
    for (const auto& host : part["hosts"]) {
      CHECK(host["t_init_s"].is_null());  // it is in the up run's record
    }
    REQUIRE(part["points"].size() == 3);
    for (const auto& point : part["points"]) {
      for (const auto& sample : point["samples"]) {
        CHECK(sample["warm"] == true);
      }
    }
  }
  const Invocation status = run_ernicctl({"status", "--state-dir", state_dir});
  CHECK(status.exit_code == 0);
  CHECK_THAT(status.out, Contains("attached runs: 3, the last passed") && Contains("guest2") &&
                             Contains("attached to instance 2"));

  // An instance killed between two attached runs: the next one fails before its first point,
  // naming it, and leaves the rest as it was.
  REQUIRE(::kill(static_cast<pid_t>(pids[1]), SIGKILL) == 0);
  const Invocation after_kill = attached_run();
  INFO(after_kill.out << after_kill.err);
  CHECK(after_kill.exit_code == 1);
  CHECK_THAT(after_kill.out + after_kill.err,
             Contains("0 of 3 points passed") &&
                 Contains(fmt::format("instance 2 (worker, pid {})", pids[1])) &&
                 Contains("is gone"));
  CHECK(namespaces_of(token) == namespaces_up);

  // Restarted in place: new instances under the same sockets, the hosts untouched.
  const Invocation restart = run_ernicctl({"up", "--restart-instances", "--state-dir", state_dir});
  INFO(restart.out << restart.err);
  REQUIRE(restart.exit_code == 0);
  const std::vector<long> restarted = instance_pids(read_json(fs::path(state_dir) / "up.json"));
  REQUIRE(restarted.size() == 2);
  CHECK(restarted != pids);
  CHECK(count_processes_mentioning(socket_dir) == 2);
  const Invocation after_restart = attached_run();
  INFO(after_restart.out << after_restart.err);
  CHECK(after_restart.exit_code == 0);
  CHECK(namespaces_of(token) == namespaces_up);

  const Invocation down = run_ernicctl({"down", "--state-dir", state_dir});
  INFO(down.out << down.err);
  CHECK(down.exit_code == 0);
  CHECK(namespaces_of(token).empty());
  CHECK(count_processes_mentioning(socket_dir) == 0);
  CHECK_FALSE(fs::exists(fs::path(state_dir) / "up.json"));
  fs::remove_all(dir);
}
