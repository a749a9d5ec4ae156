// Emulator instances on the machines that own their guests (`instances: [{on: A}, {on: B}]`):
// two namespaces, each with its own sshd, stand for two machines; their mesh runs over a link
// between them that this namespace cannot reach. ernicctl starts each instance over SSH.
#include <signal.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "placed_support.h"
#include "sshd_fixture.h"

namespace ernic {
namespace {

namespace fs = std::filesystem;

// Processes of the embedded emulator (`ernicctl emulator ...`) whose command line holds `needle`.
std::vector<testing::FoundProcess> processes_with(const std::string& needle) {
  return testing::processes_with(needle, " emulator ");
}

struct TwoMachines : testing::TwoMachineFixture {
  TwoMachines() {
    // An ernicctl of another version first in B's list: the check refuses it and ours is copied.
    std::ofstream(old_ernicctl()) << "#!/bin/sh\necho 'ernicctl 0.0.1 (old)'\n";
    fs::permissions(old_ernicctl(), fs::perms::owner_all);
  }
  fs::path old_ernicctl() const { return work() / "old-ernicctl"; }

  // Load generators on A (server) and B (client), each on its own machine's instance.
  std::string scenario(const std::string& name, const std::string& benchmarks) const {
    return write_scenario(name,
                          "emulator:\n  kind: embedded\n  instances:\n"
                          "    - {on: A, bind: " +
                              link.a_address() + "}\n    - {on: B, bind: " + link.b_address() +
                              ", ernicctl: " + old_ernicctl().string() + "}\n",
                          benchmarks);
  }
};

// The quickstart's bandwidth and latency sweeps, shortened.
const std::string kSweeps =
    "  - name: bw\n    tool: perftest\n    server: A\n    client: B\n"
    "    params: {program: load-generator, verb: [send, write, read], mode: bw, size: [4KiB, "
    "1MiB], iterations: 128, tx_depth: 64}\n    timeout: 60s\n"
    "  - name: lat\n    tool: perftest\n    server: A\n    client: B\n"
    "    params: {program: load-generator, verb: [send, write, read], mode: lat, size: [4KiB, "
    "1MiB], iterations: 50}\n    timeout: 60s\n";

// A point that runs until it is stopped (well past the 10 s the run has to notice).
const std::string kLongPoint =
    "  - name: long\n    tool: perftest\n    server: A\n    client: B\n"
    "    params: {program: load-generator, verb: write, mode: bw, size: 64KiB, duration: 40s}\n"
    "    timeout: 90s\n";

// Waits until an instance matching `needle` exists (or `run` ended).
testing::FoundProcess wait_for_instance(const std::string& needle, pid_t run) {
  return testing::wait_for_process(needle, " emulator ", run);
}

void check_nothing_left(const std::string& token) {
  REQUIRE(token.size() == 6);
  CHECK(processes_with("/tmp/ernic-" + token).empty());
  CHECK_FALSE(fs::exists("/tmp/ernic-" + token + "-A"));
  CHECK_FALSE(fs::exists("/tmp/ernic-" + token + "-B"));
}

TEST_CASE("instances on two machines, started over SSH, run the sweeps across their link",
          "[ssh][e2e][placed]") {
  TwoMachines machines;
  std::string output;
  auto args = machines.run_args(machines.scenario("placed", kSweeps));
  int status = testing::run_program(args, &output);
  INFO(output);
  REQUIRE(status == 0);
  std::ifstream history(machines.work() / "history.jsonl");
  std::string line;
  std::getline(history, line);
  nlohmann::json record = nlohmann::json::parse(line)["ernicctl"];
  REQUIRE(record["points"].size() == 12);
  for (const auto& point : record["points"]) {
    INFO(point.dump());
    CHECK(point["status"] == "passed");
  }
  // Where each ran, and with which ernicctl: A's PATH has none, but this ernicctl's path holds
  // the same version there; B's named one prints another version, so ours was copied.
  const auto& instances = record["emulator"]["instances"];
  INFO(instances.dump());
  REQUIRE(instances.size() == 2);
  CHECK(instances[0]["on"] == "A");
  CHECK(instances[0]["bind"] == machines.link.a_address());
  CHECK(instances[0]["ernicctl"] == fs::canonical(ERNIC_BINARY).string());
  CHECK(instances[0]["ernicctl_copied"] == false);
  CHECK(instances[1]["on"] == "B");
  CHECK(instances[1]["bind"] == machines.link.b_address());
  CHECK(instances[1]["ernicctl_copied"] == true);
  CHECK(instances[1]["ernicctl"].get<std::string>().ends_with("-B/ernicctl"));
  // Both instances' logs and final stats are in the run directory.
  const fs::path kept = machines.run_dir() / "emulator";
  for (const char* file : {"ernic1.log", "ernic2.log", "ernic1.stats", "ernic2.stats"}) {
    INFO(file);
    CHECK(fs::file_size(kept / file) > 0);
  }
  // The mesh crossed the link: the worker registered at the manager's link address, and data
  // went over the wire between them.
  CHECK(read_file_text(kept / "ernic2.log")
            .find("registered with the manager at " + machines.link.a_address() + ":") !=
        std::string::npos);
  CHECK(read_file_text(kept / "ernic1.log").find("registered from " + machines.link.b_address()) !=
        std::string::npos);
  CHECK(read_file_text(kept / "ernic2.stats").find("mesh_wire_bytes_sent : 0\n") ==
        std::string::npos);
  CHECK(read_file_text(kept / "ernic2.stats").find("mesh_wire_bytes_sent : ") != std::string::npos);
  // The token travelled as a file, never on a command line.
  CHECK(output.find("--token ") == std::string::npos);
  check_nothing_left(record["run_token"].get<std::string>());
}

TEST_CASE("killing the remote worker stops the run within 10 s, naming it", "[ssh][e2e][placed]") {
  TwoMachines machines;
  auto args = machines.run_args(machines.scenario("placed-kill", kLongPoint));
  pid_t run = testing::start_program(args, machines.work() / "output.txt");
  testing::InterruptAtExit interrupt_at_exit(run);
  const testing::FoundProcess worker = wait_for_instance("-B/ernic2.sock", run);
  REQUIRE(worker.pid > 0);
  const std::string token = testing::run_token_in(worker.command_line);
  // The long point is running once its client's step log exists.
  auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  auto point_started = [&] {
    std::error_code ignored;
    for (auto it = fs::recursive_directory_iterator(machines.work() / "runs", ignored);
         it != fs::recursive_directory_iterator(); it.increment(ignored)) {
      if (it->path().filename().string().find("long") != std::string::npos) {
        return true;
      }
    }
    return false;
  };
  while (!point_started() && std::chrono::steady_clock::now() < give_up &&
         testing::wait_program(run, std::chrono::milliseconds(50)) == -1) {
  }
  REQUIRE(testing::wait_program(run, std::chrono::milliseconds(500)) == -1);
  ::kill(worker.pid, SIGKILL);
  auto killed = std::chrono::steady_clock::now();
  int status = testing::wait_or_kill(run, std::chrono::seconds(40));
  double stopped_after =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  std::string output = read_file_text(machines.work() / "output.txt");
  INFO(output);
  INFO("ernicctl ended " << stopped_after << " s after the worker was killed");
  CHECK(status == 1);
  CHECK(stopped_after < 10.0);
  CHECK(output.find("instance 2 (worker on B)") != std::string::npos);
  check_nothing_left(token);
}

TEST_CASE("Ctrl-C while the remote instances start leaves nothing on either side",
          "[ssh][e2e][placed]") {
  TwoMachines machines;
  auto args = machines.run_args(machines.scenario("placed-int", kLongPoint));
  pid_t run = testing::start_program(args, machines.work() / "output.txt");
  testing::InterruptAtExit interrupt_at_exit(run);
  // The moment the manager's process exists on A, before it is ready.
  const testing::FoundProcess manager = wait_for_instance("-A/ernic1.sock", run);
  REQUIRE(manager.pid > 0);
  ::kill(run, SIGINT);
  const std::string token = testing::run_token_in(manager.command_line);
  int status = testing::wait_or_kill(run, std::chrono::seconds(30));
  INFO(read_file_text(machines.work() / "output.txt"));
  CHECK(status == 130);
  check_nothing_left(token);
}

}  // namespace
}  // namespace ernic
