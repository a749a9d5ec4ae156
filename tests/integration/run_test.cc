// `ernicctl run` end to end on netns hosts with real iperf3.
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "ernicctl_runner.h"

using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

// Most tests drive the iperf3-only scenario: quick, and every run path is the same.
const std::string kIperf3Scenario = std::string(ERNIC_SOURCE_DIR) + "/scenarios/netns-iperf3.yaml";

std::vector<json> history_records(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::vector<json> records;
  for (std::string line; std::getline(in, line);) {
    records.push_back(json::parse(line));
  }
  return records;
}

}  // namespace

TEST_CASE("an iperf3 scenario runs end to end and appends a history line with every point") {
  auto dir = fresh_dir("quickstart");
  auto before = namespaces();
  auto history = dir / "history.jsonl";
  auto result = run_ernicctl(
      {"run", kIperf3Scenario, "--runs-dir", (dir / "runs").string(), "--set",
       "history.path=" + history.string(), "--set", "benchmarks.tcp.params.duration=1s", "--set",
       "benchmarks.udp.params.duration=1s", "--output", "json"},
      {{"RUNNER_ENVIRONMENT", "github-hosted"}});
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  auto summary = json::parse(result.out);
  CHECK(summary["status"] == "passed");

  auto records = history_records(history);
  REQUIRE(records.size() == 1);
  const json& record = records[0];
  for (const char* key : {"generated", "sha", "run_id", "node", "runner", "series", "badges"}) {
    CHECK(record.contains(key));
  }
  // The scenario says no runner class: `auto` found GitHub's hosted runner in the environment.
  CHECK(record["runner"] == "github-hosted");
  CHECK(record["sha"].get<std::string>().size() <= 8);
  CHECK(record["badges"]["tcp_bw_GBs"].get<double>() > 0);
  const json& points = record["ernicctl"]["points"];
  REQUIRE(points.size() == 3);
  for (const auto& point : points) {
    INFO(point.dump());
    CHECK(point["status"] == "passed");
    CHECK(point["samples"].size() == 1);
    CHECK(point["summary"]["bandwidth_GBs"]["median"].get<double>() > 0);
    CHECK_THAT(point["commands"]["client"].get<std::string>(), Contains("iperf3 -c 10.77.0.1"));
    auto log = std::filesystem::path(record["ernicctl"]["run_dir"].get<std::string>()) /
               point["logs"][0].get<std::string>();
    CHECK(std::filesystem::exists(log));
  }
  CHECK(points[0]["samples"][0]["warm"] == false);
  CHECK(points[1]["samples"][0]["warm"] == true);
  CHECK(record["ernicctl"]["tools"]["iperf3"] == "3.12");
  CHECK(record["ernicctl"]["scenario"]["sha256"].get<std::string>().size() == 64);
  // Nothing left behind.
  CHECK(namespaces() == before);
  CHECK(count_processes("iperf3") == 0);
}

TEST_CASE("Ctrl-C in the middle of a point tears everything down and exits 130") {
  auto dir = fresh_dir("sigint");
  auto before = namespaces();
  auto history = dir / "history.jsonl";
  std::vector<std::string> argv = {ERNIC_BINARY,
                                   "run",
                                   kIperf3Scenario,
                                   "--runs-dir",
                                   (dir / "runs").string(),
                                   "--set",
                                   "history.path=" + history.string(),
                                   "--set",
                                   "benchmarks.tcp.params.duration=30s",
                                   "--set",
                                   "benchmarks.tcp.timeout=60s"};
  auto process =
      ernic::Subprocess::spawn({.argv = argv, .env = {}, .netns_path = "", .stdin_file = ""}, {});
  // The first point is running once its iperf3 client is.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  REQUIRE(process->wait_for_line(std::regex(R"(\[1/3\] tcp)"), deadline));
  while (count_processes("iperf3") < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  REQUIRE(count_processes("iperf3") == 2);
  ::kill(process->pid(), SIGINT);
  REQUIRE(process->wait_until(std::chrono::steady_clock::now() + std::chrono::seconds(15), false) ==
          ernic::Subprocess::WaitEnd::kExited);
  process->finish_output();
  INFO(process->stderr_text());
  CHECK(process->exit_code() == 130);
  CHECK(namespaces() == before);
  CHECK(count_processes("iperf3") == 0);
  // The history gets a record marked incomplete that publishes nothing.
  auto records = history_records(history);
  REQUIRE(records.size() == 1);
  CHECK(records[0]["ernicctl"]["status"] == "incomplete");
  CHECK(records[0]["series"].empty());
  CHECK(records[0]["badges"]["tcp_bw_GBs"].is_null());
}

TEST_CASE("a missing tool is named with its Debian package before anything starts") {
  auto dir = fresh_dir("missing");
  auto before = namespaces();
  auto result = run_ernicctl({"run", kIperf3Scenario, "--runs-dir", (dir / "runs").string()},
                             {{"PATH", "/usr/sbin:/sbin"}});
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.err, Contains("iperf3 is not installed (needed on client, server); install the "
                                  "Debian package iperf3"));
  CHECK_FALSE(std::filesystem::exists(dir / "runs"));
  CHECK(namespaces() == before);
}

TEST_CASE("a failing point is recorded with its reason and the run goes on") {
  auto dir = fresh_dir("failing");
  auto history = dir / "history.jsonl";
  // A UDP point whose server binds an address that is not on the host: it fails; the TCP points
  // around it still run.
  auto result = run_ernicctl(
      {"run", kIperf3Scenario, "--runs-dir", (dir / "runs").string(), "--set",
       "history.path=" + history.string(), "--set", "benchmarks.tcp.params.duration=1s", "--set",
       "benchmarks.udp.params.length=1GiB", "--set", "benchmarks.udp.params.duration=1s"});
  CHECK(result.exit_code == 1);
  auto records = history_records(history);
  REQUIRE(records.size() == 1);
  const json& points = records[0]["ernicctl"]["points"];
  CHECK(points[0]["status"] == "passed");
  CHECK(points[1]["status"] == "passed");
  CHECK(points[2]["status"] == "failed");
  CHECK_THAT(points[2]["reason"].get<std::string>(), Contains("log: "));
  CHECK(records[0]["ernicctl"]["status"] == "failed");
}

TEST_CASE("validate and parse report problems with exit status 2") {
  auto dir = fresh_dir("validate");
  std::ofstream(dir / "bad.yaml") << "name: x\nhosts: [{name: a, provider: local}]\n"
                                     "benchmarks: [{name: t, tool: iperf4, client: a}]\n";
  auto bad = run_ernicctl({"validate", (dir / "bad.yaml").string()});
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.err, Contains("bad.yaml:3:30: benchmarks[0].tool: expected one of") &&
                          Contains("did you mean 'iperf3'?"));
  auto good = run_ernicctl({"validate", kIperf3Scenario});
  CHECK(good.exit_code == 0);
  CHECK_THAT(good.out, Contains("valid: 2 hosts, 0 setup steps, 3 points"));

  auto parsed = run_ernicctl(
      {"parse", "iperf3", std::string(ERNIC_SAMPLES_DIR) + "/iperf3_netns.client.json"});
  CHECK(parsed.exit_code == 0);
  CHECK(json::parse(parsed.out)["receiver_bits_per_second"].get<double>() ==
        Approx(18220499782.902214));
  auto failed = run_ernicctl(
      {"parse", "iperf3", std::string(ERNIC_SAMPLES_DIR) + "/iperf3_error_no_server.client.json"});
  CHECK(failed.exit_code == 2);
  CHECK_THAT(failed.err, Contains("Connection refused"));
}

TEST_CASE("scenarios/schema.json is the schema ernicctl validates with") {
  auto printed = run_ernicctl({"schema"});
  REQUIRE(printed.exit_code == 0);
  std::ifstream in(std::string(ERNIC_SOURCE_DIR) + "/scenarios/schema.json");
  REQUIRE(in);
  std::stringstream committed;
  committed << in.rdbuf();
  // Regenerate with: ernicctl schema > scenarios/schema.json
  CHECK(json::parse(committed.str()) == json::parse(printed.out));
}

TEST_CASE("the dry run prints every command and starts nothing") {
  auto before = namespaces();
  auto result = run_ernicctl({"run", kIperf3Scenario, "--dry-run"});
  CHECK(result.exit_code == 0);
  CHECK_THAT(result.out,
             Contains("ip -n 'ernic-<token>-server' link add eth1 type veth peer name eth1 "
                      "netns 'ernic-<token>-client'") &&
                 Contains("client on client: iperf3 -c 10.77.0.1 -p 20001 -J -t 2 -b 0 "
                          "--connect-timeout 5000 -R"));
  CHECK(namespaces() == before);
}

TEST_CASE("a host that disappears mid-run stops the run at once instead of failing every point") {
  auto dir = fresh_dir("gone");
  auto before = namespaces();
  auto history = dir / "history.jsonl";
  std::vector<std::string> argv = {ERNIC_BINARY,
                                   "run",
                                   kIperf3Scenario,
                                   "--runs-dir",
                                   (dir / "runs").string(),
                                   "--set",
                                   "history.path=" + history.string(),
                                   "--set",
                                   "benchmarks.tcp.params.duration=2s"};
  auto process =
      ernic::Subprocess::spawn({.argv = argv, .env = {}, .netns_path = "", .stdin_file = ""}, {});
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  REQUIRE(process->wait_for_line(std::regex(R"(\[1/3\] tcp)"), deadline));
  // Remove the client's namespace behind ernicctl's back.
  std::string client_ns;
  while (client_ns.empty() && std::chrono::steady_clock::now() < deadline) {
    for (const auto& name : namespaces()) {
      if (name.rfind("ernic-", 0) == 0 && name.size() > 7 &&
          name.substr(name.size() - 7) == "-client" &&
          std::find(before.begin(), before.end(), name) == before.end()) {
        client_ns = name;
      }
    }
  }
  REQUIRE_FALSE(client_ns.empty());
  REQUIRE(std::system(("ip netns delete " + client_ns).c_str()) == 0);
  REQUIRE(process->wait_until(std::chrono::steady_clock::now() + std::chrono::seconds(30), false) ==
          ernic::Subprocess::WaitEnd::kExited);
  process->finish_output();
  INFO(process->stderr_text());
  CHECK(process->exit_code() == 1);
  auto records = history_records(history);
  REQUIRE(records.size() == 1);
  const json& run = records[0]["ernicctl"];
  CHECK_THAT(run["error"].get<std::string>(), Contains(client_ns + " of host client is gone"));
  // The point after the failure was never started.
  CHECK(run["points"][2]["status"] == "skipped");
  CHECK(namespaces() == before);
  CHECK(count_processes("iperf3") == 0);
}

namespace example_scenarios {

// Every example a user is pointed at validates and dry-runs; the guest scenarios' dry runs show
// what the setup steps will find in the benchmark command lines, and rocm-ernic's topology shows
// its instances and vfio-user attachments.
TEST_CASE("every scenario in scenarios/ validates and dry-runs") {
  int checked = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(ERNIC_SOURCE_DIR) + "/scenarios")) {
    if (entry.path().extension() != ".yaml") {
      continue;
    }
    INFO(entry.path());
    auto valid = run_ernicctl({"validate", entry.path().string()});
    INFO(valid.out + valid.err);
    CHECK(valid.exit_code == 0);
    auto dry = run_ernicctl({"run", entry.path().string(), "--dry-run"});
    INFO(dry.out + dry.err);
    CHECK(dry.exit_code == 0);
    ++checked;
  }
  CHECK(checked >= 4);

  auto softroce = run_ernicctl(
      {"run", std::string(ERNIC_SOURCE_DIR) + "/scenarios/two-guest-softroce.yaml", "--dry-run"});
  CHECK_THAT(softroce.out, Catch::Contains("rdma link add rxe0 type rxe netdev"));
  CHECK_THAT(softroce.out, Catch::Contains("ib_send_bw -d '<rdma_device>' -x '<gid_index>' -s "
                                           "4096 -D 5 --report_gbits -p 20000 192.168.233.10"));
  CHECK_THAT(softroce.out, Catch::Contains("ibv_rc_pingpong -d '<rdma_device>' -g '<gid_index>'"));

  auto ernic = run_ernicctl(
      {"run", std::string(ERNIC_SOURCE_DIR) + "/scenarios/two-vm-ernic.yaml", "--dry-run"});
  CHECK_THAT(ernic.out,
             Catch::Contains("ERNIC_TCP_GUEST_GIDS=fe80::e7:ff:fe00:1,192.168.200.10 "
                             "/opt/rocm-ernic/bin/rocm-ernic --backend tcp:manager:listen:6320"));
  CHECK_THAT(ernic.out, Catch::Contains("--backend tcp:worker:127.0.0.1:6320"));
  CHECK_THAT(ernic.out, Catch::Contains("-device vfio-user-pci socket /tmp/ernic/instance2.sock"));
  CHECK_THAT(ernic.out, Catch::Contains("1dd8:1002:1dd8:5400"));
  // The emulator starts before the guests that attach to it.
  CHECK(ernic.out.find("emulator (external)") < ernic.out.find("hosts:"));

  // Guests on embedded instances: each instance serves a guest region, which the guest's domain
  // maps as an ivshmem device; the guests' device is described in them before any other step,
  // and Debian's programs run under the image's provider.
  auto embedded = run_ernicctl(
      {"run", std::string(ERNIC_SOURCE_DIR) + "/scenarios/two-guest-embedded.yaml", "--dry-run"});
  CHECK_THAT(embedded.out, Catch::Contains("--verbs-name ernic_2 --guest-region "
                                           "'/dev/shm/ernic-<token>-i2'"));
  CHECK_THAT(embedded.out, Catch::Contains("ivshmem-plain device on /dev/shm/ernic-<token>-i1"));
  CHECK(embedded.out.find("instance-device on guest2") <
        embedded.out.find("rdma-device on guest1"));
  CHECK_THAT(
      embedded.out,
      Catch::Contains("SYSFS_PATH=/run/ernic/sysfs RDMAV_DRIVERS=/usr/lib/ernicctl/libernic "
                      "LD_PRELOAD=/usr/lib/ernicctl/libernic-cdev.so ib_write_bw -d ernic_2"));
  CHECK_THAT(embedded.out, Catch::Contains(" -c 192.168.235.10"));
  // A guest on another machine's libvirt cannot map this machine's region: located, and refused
  // before anything starts, unless its instance is placed on that machine.
  auto remote = run_ernicctl({"validate",
                              std::string(ERNIC_SOURCE_DIR) + "/scenarios/two-guest-embedded.yaml",
                              "--set", "hosts.guest1.libvirt.uri=qemu+ssh://lab@box/system"});
  CHECK(remote.exit_code == 2);
  CHECK_THAT(remote.err, Catch::Contains("two-guest-embedded.yaml:26:15: hosts[0].instance: "
                                         "hosts.guest1: its QEMU runs on box and maps instance "
                                         "1's guest region") &&
                             Catch::Contains("which is this machine"));
  // Scenarios without guests on embedded instances create no region.
  CHECK_THAT(ernic.out, !Catch::Contains("--guest-region"));
}

}  // namespace example_scenarios

TEST_CASE("--only, --skip, --repeat and --rerun-failed pick the points a run runs") {
  auto dir = fresh_dir("selection");
  auto history = dir / "history.jsonl";
  std::vector<std::string> common = {"--set", "history.path=" + history.string(),
                                     "--set", "benchmarks.tcp.params.duration=1s",
                                     "--set", "benchmarks.udp.params.duration=1s"};
  auto run_with = [&](std::vector<std::string> args) {
    std::vector<std::string> all = {"run", kIperf3Scenario, "--runs-dir", (dir / "runs").string()};
    all.insert(all.end(), common.begin(), common.end());
    all.insert(all.end(), args.begin(), args.end());
    return run_ernicctl(all);
  };
  // The UDP point fails (a 1 GiB datagram), the TCP ones pass.
  auto failing = run_with({"--set", "benchmarks.udp.params.length=1GiB"});
  CHECK(failing.exit_code == 1);
  auto first = history_records(history).back();
  std::string failed_run = first["ernicctl"]["run_dir"];

  // Only the failed point, with its parameters, and three times: this time it passes.
  auto rerun = run_with({"--rerun-failed", failed_run, "--repeat", "3"});
  INFO(rerun.err);
  CHECK(rerun.exit_code == 0);
  auto again = history_records(history).back();
  REQUIRE(again["ernicctl"]["points"].size() == 1);
  CHECK(again["ernicctl"]["points"][0]["id"] == first["ernicctl"]["points"][2]["id"]);
  CHECK(again["ernicctl"]["points"][0]["samples"].size() == 3);
  CHECK(again["ernicctl"]["selection"] == "--repeat 3 --rerun-failed " + failed_run);
  CHECK_FALSE(first["ernicctl"].contains("selection"));
  // A partial run publishes only what it measured: no TCP badge without a TCP point.
  CHECK(again["badges"].value("tcp_bw_GBs", json()).is_null());

  auto only_tcp = run_with({"--only", "tcp[*", "--skip", "*reverse=true*"});
  CHECK(only_tcp.exit_code == 0);
  auto picked = history_records(history).back();
  REQUIRE(picked["ernicctl"]["points"].size() == 1);
  CHECK(picked["ernicctl"]["points"][0]["id"] == "tcp[protocol=tcp,reverse=false,parallel=1]");

  auto unmatched = run_with({"--only", "tpc[*"});
  CHECK(unmatched.exit_code == 2);
  CHECK_THAT(unmatched.err, Contains("no point matches 'tpc[*'") &&
                                Contains("tcp[protocol=tcp,reverse=false,parallel=1]"));
}
