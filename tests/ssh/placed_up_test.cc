// `ernicctl up` with emulator instances placed on other machines (`instances: [{on: A}, {on: B}]`):
// two namespaces, each with its own sshd, stand for two machines. `up` leaves each instance
// running on its machine, `status` and `run --attach` find them there over SSH, and `down` stops
// them there.
#include <signal.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "placed_support.h"
#include "sshd_fixture.h"

namespace ernic {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The session id of `pid` (/proc/PID/stat: pid (comm) state ppid pgrp session ...); 0 when gone.
long session_of(long pid) {
  std::string stat = read_file_text("/proc/" + std::to_string(pid) + "/stat");
  std::istringstream fields(stat.substr(stat.rfind(')') + 1));
  std::string state;
  long ppid = 0;
  long group = 0;
  long session = 0;
  fields >> state >> ppid >> group >> session;
  return session;
}

struct TwoMachinesUp : testing::TwoMachineFixture {
  std::string scenario() const {
    return write_scenario("placed-up",
                          "emulator:\n  kind: embedded\n  instances:\n"
                          "    - {on: A, bind: " +
                              link.a_address() + "}\n    - {on: B, bind: " + link.b_address() +
                              "}\n",
                          "  - name: bw\n    tool: perftest\n    server: A\n    client: B\n"
                          "    params: {verb: write, mode: bw, size: 4KiB, iterations: 128}\n"
                          "    timeout: 60s\n");
  }
  fs::path state_dir() const { return work() / "state"; }
  // `ernicctl COMMAND ARGS... --state-dir STATE`; its exit status, its output in `output`.
  int ernicctl(std::vector<std::string> args, std::string* output) const {
    args.insert(args.begin(), ERNIC_BINARY);
    args.insert(args.end(), {"--state-dir", state_dir().string()});
    return testing::run_program(args, output);
  }
  const testing::TestNamespace& machine(const std::string& on) const {
    return on == "A" ? a.ns : b.ns;
  }
  // Whether `pid` is an `ernicctl emulator` process, asked inside the machine's namespace.
  bool emulator_runs(const std::string& on, long pid) const {
    std::string output;
    int status = machine(on).exec({"sh", "-c",
                                   "kill -0 " + std::to_string(pid) + " && cat /proc/" +
                                       std::to_string(pid) + "/cmdline | tr '\\000' ' '"},
                                  &output);
    return status == 0 && output.find(" emulator ") != std::string::npos;
  }
};

TEST_CASE(
    "up leaves placed instances running on their machines; status, attach and down "
    "find them there",
    "[ssh][e2e][placed][up]") {
  TwoMachinesUp machines;
  const std::string file = machines.scenario();
  std::string output;
  int status =
      machines.ernicctl({"up", file, "--runs-dir", (machines.work() / "runs").string()}, &output);
  INFO(output);
  REQUIRE(status == 0);

  // up.json records each instance with its machine, its pid there and its files there.
  json state = json::parse(read_file_text(machines.state_dir() / "up.json"));
  const json instances = state["instances"];
  INFO(instances.dump(2));
  REQUIRE(instances.size() == 2);
  const std::string token = state["run_token"];
  for (const auto& [index, on] : {std::pair{0, "A"}, std::pair{1, "B"}}) {
    const json& instance = instances[static_cast<std::size_t>(index)];
    CHECK(instance["on"] == on);
    CHECK(instance["remote"]["host"] == on);
    CHECK(instance["remote"]["dir"] == "/tmp/ernic-" + token + "-" + on);
    CHECK(instance["remote"]["token_file"] == "/tmp/ernic-" + token + "-" + on + "/mesh.token");
    REQUIRE(instance["pid"].get<long>() > 0);
    CHECK(machines.emulator_runs(on, instance["pid"].get<long>()));
    // Left running in a session of its own (it leads its process group), so that neither the
    // end of the SSH session nor ernicctl's takes it along.
    CHECK(session_of(instance["pid"].get<long>()) == instance["pid"].get<long>());
    const fs::perms token_mode =
        fs::status(instance["remote"]["token_file"].get<std::string>()).permissions();
    CHECK(token_mode == (fs::perms::owner_read | fs::perms::owner_write));
  }
  // The manifest says the same (no more pid 0).
  json manifest = json::parse(read_file_text(machines.state_dir() / "instances.json"));
  CHECK(manifest["instances"][1]["pid"] == instances[1]["pid"]);

  // status: both alive on their machines, with their stats read there.
  output.clear();
  status = machines.ernicctl({"status", "--json"}, &output);
  INFO(output);
  CHECK(status == 0);
  json report = json::parse(output.substr(output.find('{')));
  REQUIRE(report["instances"].size() == 2);
  for (const auto& instance : report["instances"]) {
    CHECK(instance["state"] == "up");
    CHECK(instance["stats"].value("mesh_peers", "") == "1");
  }

  // logs and stats read the files on the instance's machine.
  output.clear();
  CHECK(machines.ernicctl({"logs", "2"}, &output) == 0);
  CHECK(output.find("registered with the manager at " + machines.link.a_address()) !=
        std::string::npos);
  output.clear();
  CHECK(machines.ernicctl({"stats", "2"}, &output) == 0);
  CHECK(output.find("mesh_peers : 1") != std::string::npos);

  // run --attach: the load generators on A and B use the instances on their own machines.
  output.clear();
  status = machines.ernicctl(
      {"run", file, "--attach", "--runs-dir", (machines.work() / "attached-runs").string()},
      &output);
  INFO(output);
  CHECK(status == 0);
  std::ifstream history(machines.work() / "history.jsonl");
  std::string line;
  std::string last;
  while (std::getline(history, line)) {
    last = line;
  }
  REQUIRE_FALSE(last.empty());
  json record = json::parse(last)["ernicctl"];
  REQUIRE(record["points"].size() == 1);
  CHECK(record["points"][0]["status"] == "passed");

  // down: stops both over SSH, keeps their logs and stats, removes their directories.
  output.clear();
  status = machines.ernicctl({"down"}, &output);
  INFO(output);
  CHECK(status == 0);
  CHECK(output.find("stopped emulator instance 1 (manager on A, pid " +
                    std::to_string(instances[0]["pid"].get<long>()) + ")") != std::string::npos);
  CHECK(output.find("stopped emulator instance 2 (worker on B, pid " +
                    std::to_string(instances[1]["pid"].get<long>()) + ")") != std::string::npos);
  for (const auto& [index, on] : {std::pair{0, "A"}, std::pair{1, "B"}}) {
    const json& instance = instances[static_cast<std::size_t>(index)];
    CHECK_FALSE(machines.emulator_runs(on, instance["pid"].get<long>()));
    CHECK_FALSE(fs::exists(instance["remote"]["token_file"].get<std::string>()));
    CHECK_FALSE(fs::exists(instance["remote"]["dir"].get<std::string>()));
  }
  CHECK(testing::processes_with("/tmp/ernic-" + token, " emulator ").empty());
  const fs::path kept = fs::path(state["run_dir"].get<std::string>()) / "emulator";
  CHECK(read_file_text(kept / "ernic2.log")
            .find("registered with the manager at " + machines.link.a_address()) !=
        std::string::npos);
  CHECK(fs::file_size(kept / "ernic1.stats") > 0);
  CHECK_FALSE(fs::exists(machines.state_dir() / "up.json"));
}

TEST_CASE(
    "a dead placed instance fails `run --attach` before its first point; down retries an "
    "unreachable machine",
    "[ssh][e2e][placed][up]") {
  TwoMachinesUp machines;
  const std::string file = machines.scenario();
  std::string output;
  REQUIRE(machines.ernicctl({"up", file, "--runs-dir", (machines.work() / "runs").string()},
                            &output) == 0);
  const json instances = json::parse(read_file_text(machines.state_dir() / "up.json"))["instances"];
  REQUIRE(instances.size() == 2);
  const long worker = instances[1]["pid"].get<long>();
  REQUIRE(machines.b.ns.exec({"kill", "-KILL", std::to_string(worker)}) == 0);

  output.clear();
  int status = machines.ernicctl(
      {"run", file, "--attach", "--runs-dir", (machines.work() / "attached-runs").string()},
      &output);
  INFO(output);
  CHECK(status == 1);
  CHECK(output.find("instance 2 (worker on B, pid " + std::to_string(worker) +
                    "), left running by `ernicctl up`, is gone") != std::string::npos);
  CHECK(output.find("[1/1] bw") == std::string::npos);

  // B does not answer: down stops what it reaches, names B, and keeps B's instance for later.
  machines.b.sshd.freeze(true);
  output.clear();
  status = machines.ernicctl({"down"}, &output);
  machines.b.sshd.freeze(false);
  INFO(output);
  CHECK(status == 1);
  CHECK(output.find("stopped emulator instance 1 (manager on A") != std::string::npos);
  CHECK(output.find("emulator instances on B not stopped") != std::string::npos);
  CHECK_FALSE(machines.emulator_runs("A", instances[0]["pid"].get<long>()));
  json kept = json::parse(read_file_text(machines.state_dir() / "up.json"));
  REQUIRE(kept["instances"].size() == 1);
  CHECK(kept["instances"][0]["remote"]["host"] == "B");

  output.clear();
  status = machines.ernicctl({"down"}, &output);
  INFO(output);
  CHECK(status == 0);
  CHECK(output.find("already gone: emulator instance 2 (worker on B") != std::string::npos);
  CHECK_FALSE(fs::exists(instances[1]["remote"]["dir"].get<std::string>()));
  CHECK_FALSE(fs::exists(machines.state_dir() / "up.json"));
}

TEST_CASE("Ctrl-C while `up` starts placed instances leaves nothing on either machine",
          "[ssh][e2e][placed][up]") {
  TwoMachinesUp machines;
  std::vector<std::string> args = {ERNIC_BINARY,
                                   "up",
                                   machines.scenario(),
                                   "--runs-dir",
                                   (machines.work() / "runs").string(),
                                   "--state-dir",
                                   machines.state_dir().string()};
  pid_t up = testing::start_program(args, machines.work() / "output.txt");
  testing::InterruptAtExit interrupt_at_exit(up);
  // The moment the manager's process exists on A, in its session of its own.
  const testing::FoundProcess manager =
      testing::wait_for_process("-A/ernic1.sock", " emulator ", up);
  REQUIRE(manager.pid > 0);
  ::kill(up, SIGINT);
  const std::string token = testing::run_token_in(manager.command_line);
  REQUIRE(token.size() == 6);
  int status = testing::wait_or_kill(up, std::chrono::seconds(30));
  INFO(read_file_text(machines.work() / "output.txt"));
  CHECK(status == 130);
  CHECK_FALSE(machines.emulator_runs("A", manager.pid));
  CHECK(testing::processes_with("/tmp/ernic-" + token, " emulator ").empty());
  CHECK_FALSE(fs::exists("/tmp/ernic-" + token + "-A"));
  CHECK_FALSE(fs::exists("/tmp/ernic-" + token + "-B"));
  CHECK_FALSE(fs::exists(machines.state_dir() / "up.json"));
}

}  // namespace
}  // namespace ernic
