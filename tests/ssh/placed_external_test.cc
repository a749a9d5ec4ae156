// The external kind's instances on the machines that own their guests (`instances: [{on: A},
// {on: B}]`), with the stand-in rocm-ernic server: two namespaces with their own sshd stand for
// two machines, the workers dial the manager over a link between them that this namespace
// cannot reach, and iperf3 runs between hosts on the two sides.
#include <signal.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "placed_support.h"
#include "sshd_fixture.h"

namespace ernic {
namespace {

namespace fs = std::filesystem;

const std::string kStandIn = FAKE_ROCM_ERNIC;

// Stand-in instances of a run whose socket directory holds `needle`.
std::vector<testing::FoundProcess> servers_with(const std::string& needle) {
  return testing::processes_with(needle, "--backend tcp:");
}

struct TwoMachines : testing::TwoMachineFixture {
  // The run's directory on machine A is SOCKETS-A, on B SOCKETS-B.
  fs::path sockets() const { return work() / "s"; }
  // The manager on A at its link address, the worker on B (`worker_extra`: more of its keys),
  // both given `extra_args` (the stand-in's --fake-* flags); an iperf3 point of `duration`.
  std::string scenario(const std::string& name, const std::string& extra_args,
                       const std::string& worker_extra = "",
                       const std::string& duration = "1s") const {
    return write_scenario(name,
                          "emulator:\n  kind: external\n  binary: " + kStandIn +
                              "\n  socket_dir: " + sockets().string() +
                              "\n  mesh_port: 6391\n  ready_timeout: 30s\n  stop_timeout: 2s\n"
                              "  extra_args: [" +
                              extra_args + "]\n  instances:\n    - {on: A, bind: " +
                              link.a_address() + "}\n    - {on: B" + worker_extra + "}\n",
                          "  - name: tcp\n    tool: iperf3\n    server: A\n    client: B\n"
                          "    params: {protocol: tcp, duration: " +
                              duration + "}\n    timeout: 60s\n");
  }
};

const std::string kReadyAfter200ms = "--fake-ready-delay-ms, '200'";

void check_nothing_left(const TwoMachines& machines) {
  CHECK(servers_with(machines.sockets().string()).empty());
  CHECK_FALSE(fs::exists(machines.sockets().string() + "-A"));
  CHECK_FALSE(fs::exists(machines.sockets().string() + "-B"));
}

TEST_CASE("external instances on two machines, started over SSH, serve a run across their link",
          "[ssh][e2e][placed][external]") {
  TwoMachines machines;
  std::string output;
  int status = testing::run_program(
      machines.run_args(machines.scenario("ext-placed", kReadyAfter200ms)), &output);
  INFO(output);
  REQUIRE(status == 0);
  std::ifstream history(machines.work() / "history.jsonl");
  std::string line;
  std::getline(history, line);
  nlohmann::json record = nlohmann::json::parse(line)["ernicctl"];
  REQUIRE(record["points"].size() == 1);
  CHECK(record["points"][0]["status"] == "passed");
  const auto& emulator = record["emulator"];
  INFO(emulator.dump());
  CHECK(emulator["kind"] == "external");
  CHECK(emulator["version"] == "rocm-ernic 0.0-fake");
  REQUIRE(emulator["instances"].size() == 2);
  CHECK(emulator["instances"][0]["on"] == "A");
  CHECK(emulator["instances"][0]["backend"] == "tcp:manager:listen:6391");
  CHECK(emulator["instances"][1]["on"] == "B");
  // The worker dials the manager at the address B reaches it at, over the link.
  CHECK(emulator["instances"][1]["backend"] == "tcp:worker:" + machines.link.a_address() + ":6391");
  // Both servers' logs and final stats came back; their consoles were streamed here.
  const fs::path kept = machines.run_dir() / "emulator";
  for (const char* file :
       {"instance1.log", "instance2.log", "instance1.stats", "instance2.stats"}) {
    INFO(file);
    CHECK(fs::file_size(kept / file) > 0);
  }
  CHECK(fs::exists(kept / "instance2.console"));
  // The worker ran on B with its GIDs (the environment crossed SSH) and its socket in B's
  // directory of the run, the one the manifest names.
  const std::string worker_log = read_file_text(kept / "instance2.log");
  CHECK(worker_log.find("guest gids fe80::e7:ff:fe00:2,192.168.200.20") != std::string::npos);
  CHECK(worker_log.find(machines.sockets().string() + "-B/instance2.sock") != std::string::npos);
  CHECK(read_file_text(kept / "instance1.stats").find("uptime_ms : ") != std::string::npos);
  auto manifest = nlohmann::json::parse(read_file_text(machines.run_dir() / "instances.json"));
  CHECK(manifest["instances"][1]["on"] == "B");
  check_nothing_left(machines);
}

TEST_CASE("an external instance whose binary is missing on its machine names host and path",
          "[ssh][e2e][placed][external]") {
  TwoMachines machines;
  std::string output;
  int status = testing::run_program(
      machines.run_args(
          machines.scenario("ext-missing", kReadyAfter200ms, ", binary: /opt/nowhere/rocm-ernic")),
      &output);
  INFO(output);
  CHECK(status == 1);
  CHECK(output.find("emulator instance 2: the rocm-ernic server /opt/nowhere/rocm-ernic is not an "
                    "executable file on B") != std::string::npos);
  // Checked before anything started: no server, no directory on either side.
  check_nothing_left(machines);
}

TEST_CASE("an external instance dying on its machine stops the run within 10 s, naming it",
          "[ssh][e2e][placed][external]") {
  TwoMachines machines;
  // Both stand-ins exit with status 3 two seconds after they are ready, while a 40 s point runs.
  std::string output;
  const auto started = std::chrono::steady_clock::now();
  int status = testing::run_program(
      machines.run_args(machines.scenario(
          "ext-dies", kReadyAfter200ms + ", --fake-exit-after-ms, '2000'", "", "40s")),
      &output);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  INFO(output);
  CHECK(status == 1);
  CHECK(took < 12.0);
  CHECK(output.find("on A) ended: exit status 3") != std::string::npos);
  CHECK(output.find("mesh peer lost: connection reset") != std::string::npos);
  check_nothing_left(machines);
}

TEST_CASE("Ctrl-C while the external instances start leaves nothing on either side",
          "[ssh][e2e][placed][external]") {
  TwoMachines machines;
  // Ready only after 20 s: the interrupt comes while the manager is still starting.
  auto args = machines.run_args(machines.scenario("ext-int", "--fake-ready-delay-ms, '20000'"));
  pid_t run = testing::start_program(args, machines.work() / "output.txt");
  testing::InterruptAtExit interrupt_at_exit(run);
  REQUIRE(testing::wait_for_process("-A/instance1.sock", "--backend tcp:", run).pid > 0);
  ::kill(run, SIGINT);
  int status = testing::wait_or_kill(run, std::chrono::seconds(30));
  INFO(read_file_text(machines.work() / "output.txt"));
  CHECK(status == 130);
  check_nothing_left(machines);
}

}  // namespace
}  // namespace ernic
