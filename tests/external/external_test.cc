// The external emulator kind against the stand-in server: readiness, stop, death detection, and
// an `ernicctl run` end to end.
#include <signal.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "emulators/registry.h"
#include "ernicctl_runner.h"
#include "run/leftovers.h"

using Catch::Matchers::Contains;
using namespace ernic;
using SteadyClock = std::chrono::steady_clock;

namespace {

const std::string kStandIn = FAKE_ROCM_ERNIC;

bool pid_exists(int pid) {
  return ::kill(pid, 0) == 0 || errno != ESRCH;
}

// An `emulator:` section as the scenario loader hands it to the kind.
Config section(const std::string& yaml) {
  return make_config(YAML::Load(yaml), external_emulator().schema(), "s.yaml", "emulator");
}

Config config_with(const std::string& extra) {
  return section("{kind: external, binary: " + kStandIn + ", mesh_port: 6399" + extra + "}");
}

struct Run {
  ernic::testing::ScratchDir dir;
  CleanupStack cleanup;
  EmulatorContext context;
  explicit Run(const std::string& name) : dir(fresh_dir(name)) {
    context = {.run_dir = dir, .run_token = name + std::to_string(::getpid()), .cleanup = &cleanup};
  }
  ~Run() {
    cleanup.run_all();
    std::filesystem::remove_all(dir);
  }
};

}  // namespace

TEST_CASE("start waits for each instance's socket and ready line, and the cleanup stops them") {
  Run run("ext-start");
  auto started = SteadyClock::now();
  auto emulator = external_emulator().start(
      config_with(", extra_args: [--fake-ready-delay-ms, '300']"), run.context);
  CHECK(SteadyClock::now() - started >= std::chrono::milliseconds(300));
  REQUIRE(emulator->instance_count() == 2);
  CHECK(emulator->check_alive().empty());

  auto manager = emulator->facts_for(1);
  CHECK(manager["emulator_role"] == "manager");
  CHECK(manager["emulator_mac"] == "02:e7:00:00:00:01");
  CHECK(manager["emulator_gids"] == "fe80::e7:ff:fe00:1,192.168.200.10");
  CHECK(std::filesystem::is_socket(manager["emulator_socket"]));
  CHECK(emulator->facts_for(2)["emulator_role"] == "worker");
  CHECK_THROWS_AS(emulator->facts_for(3), std::out_of_range);

  // The stand-in logged the GIDs it was given, so the environment reached it.
  std::ifstream log(run.dir / "emulator" / "instance2.log");
  std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  CHECK_THAT(text, Contains("guest gids fe80::e7:ff:fe00:2,192.168.200.20"));
  CHECK_THAT(text, Contains("backend tcp:worker:127.0.0.1:6399"));
  CHECK(std::filesystem::exists(run.dir / "emulator" / "instance1.stats"));

  auto record = emulator->record();
  CHECK(record["kind"] == "external");
  CHECK(record["binary"] == kStandIn);
  CHECK(record["version"] == "rocm-ernic 0.0-fake");
  CHECK(record["instances"].size() == 2);

  std::ifstream manifest_file(run.dir / "instances.json");
  auto manifest = nlohmann::json::parse(manifest_file);
  REQUIRE(manifest["instances"].size() == 2);
  CHECK(manifest["instances"][0]["id"] == 1);
  CHECK(manifest["instances"][0]["role"] == "manager");
  CHECK(manifest["instances"][1]["mac"] == "02:e7:00:00:00:02");
  int pid = manifest["instances"][1]["pid"];
  CHECK(pid_exists(pid));
  auto socket_dir = std::filesystem::path(manager["emulator_socket"]).parent_path();

  run.cleanup.run_all();
  CHECK_FALSE(pid_exists(pid));
  CHECK_FALSE(std::filesystem::exists(socket_dir));
  // The stand-in honoured SIGTERM: it said so in its log.
  std::ifstream after(run.dir / "emulator" / "instance1.log");
  std::string final_text((std::istreambuf_iterator<char>(after)), std::istreambuf_iterator<char>());
  CHECK_THAT(final_text, Contains("SIGTERM: shutting down"));
}

TEST_CASE("an instance ignoring SIGTERM is killed once stop_timeout has passed") {
  Run run("ext-sigterm");
  auto emulator =
      external_emulator().start(config_with(", instances: 1, stop_timeout: 1s, extra_args: "
                                            "[--fake-ignore-sigterm, --fake-ready-delay-ms, '0']"),
                                run.context);
  std::ifstream manifest_file(run.dir / "instances.json");
  int pid = nlohmann::json::parse(manifest_file)["instances"][0]["pid"];
  auto stopping = SteadyClock::now();
  run.cleanup.run_all();
  auto took = SteadyClock::now() - stopping;
  CHECK(took >= std::chrono::milliseconds(900));
  CHECK(took < std::chrono::milliseconds(3000));
  CHECK_FALSE(pid_exists(pid));
}

TEST_CASE("a dead instance is reported by check_alive with its exit status and last log lines") {
  Run run("ext-death");
  auto emulator = external_emulator().start(
      config_with(
          ", instances: 1, extra_args: [--fake-ready-delay-ms, '0', --fake-exit-after-ms, '300']"),
      run.context);
  std::string report;
  for (auto deadline = SteadyClock::now() + std::chrono::seconds(10);
       report.empty() && SteadyClock::now() < deadline;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    report = emulator->check_alive();
  }
  CHECK_THAT(report, Contains("external emulator instance 1 (manager, pid"));
  CHECK_THAT(report, Contains("exited with status 3"));
  CHECK_THAT(report, Contains("mesh peer lost: connection reset"));
}

TEST_CASE("an instance that never becomes ready fails start within ready_timeout and is stopped") {
  Run run("ext-never");
  auto started = SteadyClock::now();
  std::string error;
  try {
    external_emulator().start(config_with(", ready_timeout: 1s, extra_args: [--fake-never-ready]"),
                              run.context);
  } catch (const std::exception& e) {
    error = e.what();
  }
  auto took = SteadyClock::now() - started;
  CHECK_THAT(error, Contains("external emulator instance 1 (manager, pid"));
  CHECK_THAT(error, Contains("was not ready within 1.00 s"));
  CHECK_THAT(error, Contains("exists, no line matching 'realized'"));
  CHECK(took < std::chrono::seconds(4));
  // Stopped by start() itself, before any cleanup runs.
  CHECK(count_processes_mentioning(run.dir.string()) == 0);
}

TEST_CASE("a binary that exits at once is reported with its own error") {
  Run run("ext-bad");
  std::string error;
  try {
    external_emulator().start(config_with(", extra_args: [--no-such-flag, x]"), run.context);
  } catch (const std::exception& e) {
    error = e.what();
  }
  CHECK_THAT(error, Contains("exited with status 2 before it was ready"));
  CHECK_THAT(error, Contains("unknown flag --no-such-flag"));
  CHECK_THROWS_WITH(external_emulator().start(
                        section("{kind: external, binary: /nonexistent/rocm-ernic}"), run.context),
                    Contains("/nonexistent/rocm-ernic is not an executable file"));
}

TEST_CASE(
    "ernicctl run with kind external: stand-in instances, iperf3 between netns hosts, nothing "
    "left") {
  auto dir = fresh_dir("ext-e2e");
  auto before = namespaces();
  // Compared with what ran before, so that unrelated iperf3 processes on the machine do not count.
  int iperf3_before = count_processes("iperf3");
  auto history = dir / "history.jsonl";
  std::string scenario = std::string(ERNIC_EXTERNAL_TEST_DIR) + "/external-netns-iperf3.yaml";

  auto dry = run_ernicctl({"run", scenario, "--dry-run", "--set", "emulator.binary=" + kStandIn});
  INFO(dry.out + dry.err);
  REQUIRE(dry.exit_code == 0);
  // print_dry_run does not call EmulatorKind::describe() yet; cli/emulators/external_test.cc
  // checks the instance command lines describe() returns.
  CHECK_THAT(dry.out, Contains("scenario external-netns-iperf3 (1 points)"));

  auto result =
      run_ernicctl({"run", scenario, "--runs-dir", (dir / "runs").string(), "--set",
                    "emulator.binary=" + kStandIn, "--set", "history.path=" + history.string()},
                   {}, std::chrono::seconds(180));
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  std::ifstream in(history);
  std::string line, last;
  while (std::getline(in, line)) {
    last = line;
  }
  auto record = nlohmann::json::parse(last);
  INFO(record.dump(2));
  CHECK(record["ernicctl"]["emulator"]["kind"] == "external");
  CHECK(record["ernicctl"]["emulator"]["version"] == "rocm-ernic 0.0-fake");
  for (const auto& point : record["ernicctl"]["points"]) {
    CHECK(point["status"] == "passed");
  }
  bool manifest_found = false;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir / "runs")) {
    if (entry.path().filename() == "instances.json") {
      std::ifstream file(entry.path());
      manifest_found = nlohmann::json::parse(file)["instances"].size() == 2;
    }
  }
  CHECK(manifest_found);
  // The instances' logs are in the run directory: their command lines name it.
  CHECK(count_processes_mentioning(dir.string()) == 0);
  CHECK(count_processes("iperf3") == iperf3_before);
  CHECK(namespaces() == before);
  std::filesystem::remove_all(dir);
}

TEST_CASE("Ctrl-C while the instances start stops them and removes their sockets") {
  auto dir = fresh_dir("ext-ctrlc");
  auto before = namespaces();
  // This run's instances, and nothing else on the machine: their logs are in its directory.
  auto instances = [&] { return count_processes_mentioning((dir / "runs").string() + "/"); };
  std::string scenario = std::string(ERNIC_EXTERNAL_TEST_DIR) + "/external-netns-iperf3.yaml";
  auto process = Subprocess::spawn(
      {.argv = {ERNIC_BINARY, "run", scenario, "--runs-dir", (dir / "runs").string(), "--set",
                "emulator.binary=" + kStandIn, "--set", "emulator.extra_args=[--fake-never-ready]",
                "--set", "emulator.ready_timeout=60s", "--set",
                "history.path=" + (dir / "history.jsonl").string()},
       .env = {},
       .netns_path = "",
       .stdin_file = ""},
      {});
  // Wait until the manager runs, then interrupt the way a terminal does.
  auto deadline = SteadyClock::now() + std::chrono::seconds(30);
  while (instances() == 0 && SteadyClock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (instances() == 0) {
    process->terminate(std::chrono::milliseconds(2000));
    process->finish_output();
    FAIL("the manager never ran: " << process->stdout_text() << process->stderr_text());
  }
  ::kill(process->pid(), SIGINT);
  auto stopped = SteadyClock::now();
  REQUIRE(process->wait_until(SteadyClock::now() + std::chrono::seconds(20), false) ==
          Subprocess::WaitEnd::kExited);
  process->finish_output();
  INFO(process->stderr_text());
  CHECK(SteadyClock::now() - stopped < std::chrono::seconds(10));
  CHECK(process->exit_code() != 0);
  CHECK(instances() == 0);
  CHECK(namespaces() == before);
  bool sockets_left = false;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::temp_directory_path())) {
    if (entry.path().filename().string().rfind("ernic-ext-", 0) == 0 &&
        std::filesystem::exists(entry.path() / "instance1.sock")) {
      sockets_left = true;
    }
  }
  CHECK_FALSE(sockets_left);
  std::filesystem::remove_all(dir);
}

// rocm-ernic's developers bring their instances up once and run playbooks against them: the
// instances must outlive ernicctl, and `down` must find them from what `up` recorded even with
// the sockets in a directory of the user's choosing.
TEST_CASE(
    "up leaves external instances running after ernicctl exits; status sees them; down "
    "stops them") {
  auto dir = fresh_dir("ext-up");
  auto before = namespaces();
  std::string state = (dir / "state").string();
  std::string scenario = std::string(ERNIC_EXTERNAL_TEST_DIR) + "/external-netns-iperf3.yaml";
  auto sockets = dir / "sockets";
  std::filesystem::create_directories(sockets);
  auto up = run_ernicctl(
      {"up", scenario, "--runs-dir", (dir / "runs").string(), "--state-dir", state, "--set",
       "emulator.binary=" + kStandIn, "--set", "emulator.socket_dir=" + sockets.string()},
      {}, std::chrono::seconds(120));
  INFO(up.out << up.err);
  REQUIRE(up.exit_code == 0);

  std::ifstream manifest_file(dir / "state" / "instances.json");
  auto manifest = nlohmann::json::parse(manifest_file);
  REQUIRE(manifest["instances"].size() == 2);
  std::vector<pid_t> pids;
  for (const auto& instance : manifest["instances"]) {
    pids.push_back(instance["pid"].get<pid_t>());
    CHECK(process_running(pids.back()));
    CHECK(std::filesystem::is_socket(instance["socket"].get<std::string>()));
  }
  auto status = run_ernicctl({"status", "--json", "--state-dir", state});
  INFO(status.out << status.err);
  CHECK(status.exit_code == 0);
  auto report = nlohmann::json::parse(status.out);
  REQUIRE(report["instances"].size() == 2);
  for (const auto& instance : report["instances"]) {
    CHECK(instance["state"] == "up");
  }

  auto down = run_ernicctl({"down", "--state-dir", state});
  INFO(down.out << down.err);
  CHECK(down.exit_code == 0);
  for (pid_t pid : pids) {
    CHECK_THAT(down.out, Contains("removed process " + std::to_string(pid)));
    CHECK_FALSE(process_running(pid));
  }
  CHECK(namespaces() == before);
  CHECK_FALSE(std::filesystem::exists(dir / "state" / "instances.json"));
  std::filesystem::remove_all(dir);
}
