// `ernicctl up / status / logs / stats / ssh / down` through the binary, with the embedded
// emulator and two namespaces; and `down` finding what a killed `ernicctl run` left.
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <thread>

#include "base/file_text.h"
#include "emulators/instance_manifest.h"
#include "ernicctl_runner.h"
#include "run/up_state.h"

namespace {
namespace fs = std::filesystem;
using Catch::Contains;
using nlohmann::json;

const char* kScenario = R"(version: 1
name: bringup
emulator: {kind: embedded, instances: 2}
hosts:
  - {name: guest1, provider: embedded, instance: 1}
  - {name: guest2, provider: embedded, instance: 2}
  - {name: server, provider: netns}
  - {name: client, provider: netns}
netns: {subnet: 10.79.0.0/24}
benchmarks:
  - {name: tcp, tool: iperf3, server: server, client: client, timeout: 90s,
     params: {duration: 60s}}
history: {enabled: false}
)";

// A zombie is not alive: orphans are reaped by whatever init the machine has, maybe late.
bool alive(long pid) {
  std::string stat = ernic::read_file_text("/proc/" + std::to_string(pid) + "/stat");
  auto paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] != 'Z';
}

// The run token in the names of namespaces that appeared since `before`.
std::set<std::string> new_tokens(const std::vector<std::string>& before) {
  std::set<std::string> tokens;
  std::regex name("^ernic-([0-9a-f]{6})-.*$");
  for (const auto& ns : namespaces()) {
    std::smatch match;
    if (std::find(before.begin(), before.end(), ns) == before.end() &&
        std::regex_match(ns, match, name)) {
      tokens.insert(match[1].str());
    }
  }
  return tokens;
}

std::string read_file(const fs::path& file) {
  std::ifstream in(file);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

int processes_mentioning(const std::string& text) {
  int count = 0;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    std::string cmdline = ernic::read_file_text(entry.path() / "cmdline");
    count += cmdline.find(text) != std::string::npos ? 1 : 0;
  }
  return count;
}

TEST_CASE(
    "up leaves instances and namespaces running; status, logs, stats, ssh; down removes all") {
  auto dir = fresh_dir("up");
  auto before = namespaces();
  std::ofstream(dir / "scenario.yaml") << kScenario;
  std::string state = (dir / "state").string();
  // Where rocm-ernic's helper reads the instances' logs.
  fs::path log_dir = dir / "ernic-logs";

  auto up = run_ernicctl({"up", (dir / "scenario.yaml").string(), "--runs-dir",
                          (dir / "runs").string(), "--state-dir", state},
                         {{"ERNIC_LOG_DIR", log_dir.string()}});
  INFO(up.out << up.err);
  REQUIRE(up.exit_code == 0);
  CHECK_THAT(up.out, Contains("bringup is up"));

  // instances.json in the harness's format, with what their playbooks read.
  json manifest;
  std::ifstream(dir / "state" / "instances.json") >> manifest;
  REQUIRE(manifest["instances"].size() == 2);
  std::vector<long> pids;
  for (int i = 0; i < 2; ++i) {
    const auto& instance = manifest["instances"][i];
    CHECK(instance["id"] == i + 1);
    CHECK(instance["role"] == (i == 0 ? "manager" : "worker"));
    CHECK(instance["vm"]["vm_name"] == (i == 0 ? "guest1" : "guest2"));
    CHECK(instance["vm"]["ssh_port"] == 22);
    CHECK(instance["vm"]["ssh_user"] == "root");
    CHECK(instance["vm"]["attached"] == true);
    pids.push_back(instance["pid"].get<long>());
    // Still running after `up` exited.
    CHECK(alive(pids.back()));
    CHECK(fs::exists(instance["socket"].get<std::string>()));
  }
  CHECK(namespaces().size() == before.size() + 2);

  // The typed state reads everything `up` wrote: read and written back, both files are the same
  // bytes (rocm-ernic's clients read these files, so nothing may be dropped on a rewrite).
  const std::string up_text = read_file(dir / "state" / "up.json");
  CHECK(ernic::up_state_text(ernic::parse_up_state(up_text, "up.json")) == up_text);
  const std::string manifest_text = read_file(dir / "state" / "instances.json");
  CHECK(ernic::instance_manifest_text(
            ernic::parse_instance_manifest(manifest_text, "instances.json")) == manifest_text);

  // Right after `up` the manager's figures already count the worker that joined last.
  auto manager = run_ernicctl({"stats", "1", "--state-dir", state});
  CHECK(manager.exit_code == 0);
  CHECK_THAT(manager.out, Contains("mesh_peers : 1\n"));

  // Each instance's live stats file as STATE_DIR/<id>.stats and its log as LOG_DIR/<id>.log,
  // where rocm-ernic's helper reads them.
  for (int id : {1, 2}) {
    INFO("instance " << id);
    const auto& instance = manifest["instances"][id - 1];
    fs::path stats = dir / "state" / fmt::format("{}.stats", id);
    fs::path log = log_dir / fmt::format("{}.log", id);
    REQUIRE(fs::exists(stats));
    REQUIRE(fs::exists(log));
    CHECK(fs::equivalent(stats, instance["stats"].get<std::string>()));
    CHECK(fs::equivalent(log, instance["log"].get<std::string>()));
    CHECK_THAT(read_file(stats), Contains("mesh_peers : "));
  }
  CHECK_THAT(read_file(log_dir / "1.log"), Contains("device realized"));
  CHECK_FALSE(fs::exists(dir / "state" / "logs"));  // ERNIC_LOG_DIR said where

  auto again = run_ernicctl({"up", (dir / "scenario.yaml").string(), "--state-dir", state});
  CHECK(again.exit_code == 2);
  CHECK_THAT(again.err, Contains("run `ernicctl down` first"));

  auto status = run_ernicctl({"status", "--json", "--state-dir", state});
  INFO(status.out << status.err);
  CHECK(status.exit_code == 0);
  json report = json::parse(status.out);
  CHECK(report["up"] == true);
  REQUIRE(report["hosts"].size() == 4);
  for (const auto& host : report["hosts"]) {
    CHECK(host["state"] == "up");
  }
  for (const auto& instance : report["instances"]) {
    CHECK(instance["state"] == "up");
  }

  auto logs = run_ernicctl({"logs", "1", "--state-dir", state});
  CHECK(logs.exit_code == 0);
  CHECK_THAT(logs.out, Contains("device realized"));
  auto stats = run_ernicctl({"stats", "2", "--summary", "--state-dir", state});
  CHECK(stats.exit_code == 0);
  CHECK_THAT(stats.out, Contains("instance 2 (worker): sent "));
  auto missing = run_ernicctl({"logs", "7", "--state-dir", state});
  CHECK(missing.exit_code == 2);
  CHECK_THAT(missing.err, Contains("no instance 7"));

  // `ssh` into a namespace host runs the command inside it.
  auto inside = run_ernicctl({"ssh", "client", "--state-dir", state, "--", "ip", "-br", "addr"});
  INFO(inside.out << inside.err);
  CHECK(inside.exit_code == 0);
  CHECK_THAT(inside.out, Contains("10.79.0.2/24"));

  // An instance that dies shows in status.
  ::kill(static_cast<pid_t>(pids[1]), SIGKILL);
  for (int i = 0; i < 100 && alive(pids[1]); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  auto degraded = run_ernicctl({"status", "--json", "--state-dir", state});
  CHECK(degraded.exit_code == 1);
  CHECK(json::parse(degraded.out)["instances"][1]["state"] == "gone");

  auto down = run_ernicctl({"down", "--state-dir", state});
  INFO(down.out << down.err);
  CHECK(down.exit_code == 0);
  CHECK_THAT(down.out, Contains("removed netns ernic-"));
  CHECK(namespaces() == before);
  CHECK_FALSE(alive(pids[0]));
  CHECK_FALSE(fs::exists(dir / "state" / "up.json"));
  CHECK_FALSE(fs::exists(dir / "state" / "instances.json"));
  for (int id : {1, 2}) {
    CHECK_FALSE(fs::exists(fs::symlink_status(dir / "state" / fmt::format("{}.stats", id))));
    CHECK_FALSE(fs::exists(fs::symlink_status(log_dir / fmt::format("{}.log", id))));
  }
  CHECK_FALSE(fs::exists(log_dir));  // `up` made it
  auto after = run_ernicctl({"status", "--state-dir", state});
  CHECK(after.exit_code == 2);
  CHECK_THAT(after.err, Contains("nothing is up"));
  fs::remove_all(dir);
}

// Ctrl-C while `up` is still setting up: nothing may be left running and no state written, or
// the next `up` would refuse and `status` would describe a half-built run.
TEST_CASE("Ctrl-C during up tears everything down and writes no state") {
  auto dir = fresh_dir("up-ctrlc");
  auto before = namespaces();
  std::string scenario = kScenario;
  scenario.replace(scenario.find("benchmarks:"), 0,
                   "setup: [{step: command, hosts: [server], run: 'sleep 60'}]\n");
  std::ofstream(dir / "scenario.yaml") << scenario;
  std::string state = (dir / "state").string();
  int sleeps_before = processes_mentioning("sleep 60");
  auto up = ernic::Subprocess::spawn(
      {.argv = {ERNIC_BINARY, "up", (dir / "scenario.yaml").string(), "--runs-dir",
                (dir / "runs").string(), "--state-dir", state}},
      {});
  REQUIRE(up->wait_for_line(std::regex("setup: command on server"),
                            std::chrono::steady_clock::now() + std::chrono::seconds(30)));
  auto tokens = new_tokens(before);
  REQUIRE(tokens.size() == 1);
  std::string token = *tokens.begin();
  CHECK(processes_mentioning("/ernic-" + token + "/") == 2);
  // The step is announced before its command starts: interrupt once it runs.
  auto started = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (processes_mentioning("sleep 60") == sleeps_before &&
         std::chrono::steady_clock::now() < started) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  CHECK(processes_mentioning("sleep 60") > sleeps_before);

  ::kill(up->pid(), SIGINT);
  auto interrupted = std::chrono::steady_clock::now();
  REQUIRE(up->wait_until(interrupted + std::chrono::seconds(20), false) ==
          ernic::Subprocess::WaitEnd::kExited);
  up->finish_output();
  INFO(up->stdout_text() << up->stderr_text());
  CHECK(std::chrono::steady_clock::now() - interrupted < std::chrono::seconds(10));
  CHECK(up->exit_code() == 130);
  CHECK_THAT(up->stderr_text(), Contains("everything was torn down"));
  CHECK_FALSE(fs::exists(dir / "state" / "up.json"));
  CHECK_FALSE(fs::exists(dir / "state" / "instances.json"));
  CHECK(namespaces() == before);
  CHECK(processes_mentioning("/ernic-" + token + "/") == 0);
  CHECK(processes_mentioning("sleep 60") == sleeps_before);
  CHECK_FALSE(fs::exists("/tmp/ernic-" + token));
  fs::remove_all(dir);
}

TEST_CASE("down finds and removes what a killed run left, and leaves a live run alone") {
  auto dir = fresh_dir("leftovers");
  auto before = namespaces();
  std::ofstream(dir / "scenario.yaml") << kScenario;
  auto run =
      ernic::Subprocess::spawn({.argv = {ERNIC_BINARY, "run", (dir / "scenario.yaml").string(),
                                         "--runs-dir", (dir / "runs").string()},
                                .env = {},
                                .netns_path = "",
                                .stdin_file = ""},
                               {});
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  REQUIRE(run->wait_for_line(std::regex(R"(\[1/1\] tcp)"), deadline));
  auto tokens = new_tokens(before);
  REQUIRE(tokens.size() == 1);
  std::string token = *tokens.begin();

  // While ernicctl runs, its resources are not leftovers.
  auto listed = run_ernicctl({"down", "--list", "--state-dir", (dir / "state").string()});
  CHECK(listed.exit_code == 0);
  CHECK_THAT(listed.err, Contains("left alone: run " + token + " is still going"));
  CHECK(listed.out.find(token) == std::string::npos);

  // A guest region its embedded instance would have made for a guest (this scenario has none:
  // the file stands in for one, named as emu::guest_region_path names them).
  const fs::path region = "/dev/shm/ernic-" + token + "-i1";
  std::ofstream(region) << "region";
  // Killed outright: nothing of its own teardown runs.
  ::kill(run->pid(), SIGKILL);
  run->wait_until(std::chrono::steady_clock::now() + std::chrono::seconds(10), false);
  // Its namespaces and socket directory stay; its instances are tied to the run and die with
  // it (docs/bringup.md), so whether any is still there to remove is not asserted here.
  CHECK(new_tokens(before) == tokens);
  CHECK(fs::exists("/tmp/ernic-" + token));

  auto down = run_ernicctl({"down", "--state-dir", (dir / "state").string()});
  INFO(down.out << down.err);
  CHECK(down.exit_code == 0);
  CHECK_THAT(down.out, Contains("removed netns ernic-" + token + "-server"));
  CHECK_THAT(down.out, Contains("removed directory /tmp/ernic-" + token));
  CHECK_THAT(down.out, Contains("removed file " + region.string()));
  CHECK_FALSE(fs::exists(region));
  CHECK(namespaces() == before);
  CHECK(processes_mentioning("/ernic-" + token + "/") == 0);
  CHECK_FALSE(fs::exists("/tmp/ernic-" + token));
  fs::remove_all(dir);
}

}  // namespace
