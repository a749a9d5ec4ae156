// `ernicctl run scenarios/quickstart.yaml`: the embedded emulator's manager and worker, Debian's
// perftest through the instances' verbs devices (the sustained point through the load
// generator), and iperf3, end to end.
#include <fmt/format.h>
#include <signal.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "base/file_text.h"
#include "base/subprocess.h"
#include "ernicctl_runner.h"

using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

const std::string kQuickstart = std::string(ERNIC_SOURCE_DIR) + "/scenarios/quickstart.yaml";

json last_record(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line)) {
    last = line;
  }
  return json::parse(last);
}

// Processes whose command line mentions `text`.
int processes_mentioning(const std::string& text) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::string cmdline = ernic::read_file_text(entry.path() / "cmdline");
    if (cmdline.find(text) != std::string::npos) {
      ++count;
    }
  }
  return count;
}

// The pid of a child of `parent` whose command line contains `text`, 0 when none.
pid_t child_mentioning(pid_t parent, const std::string& text) {
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) {
      continue;
    }
    std::ifstream stat(entry.path() / "stat");
    std::string pid, comm, state;
    pid_t ppid = 0;
    stat >> pid >> comm >> state >> ppid;
    std::string cmdline = ernic::read_file_text(entry.path() / "cmdline");
    if (ppid == parent && cmdline.find(text) != std::string::npos) {
      return std::stoi(name);
    }
  }
  return 0;
}

// `ernicctl run quickstart.yaml` started in the background, its runs and history in `dir`, with
// `sets` as --set overrides.
std::unique_ptr<ernic::Subprocess> start_quickstart(const std::filesystem::path& dir,
                                                    const std::filesystem::path& history,
                                                    const std::vector<std::string>& sets) {
  std::vector<std::string> argv = {ERNIC_BINARY,
                                   "run",
                                   kQuickstart,
                                   "--runs-dir",
                                   (dir / "runs").string(),
                                   "--set",
                                   "history.path=" + history.string()};
  for (const auto& set : sets) {
    argv.push_back("--set");
    argv.push_back(set);
  }
  return ernic::Subprocess::spawn({.argv = argv, .env = {}, .netns_path = "", .stdin_file = ""},
                                  {});
}

}  // namespace

TEST_CASE("quickstart runs the embedded emulator sweep and records every point") {
  auto dir = fresh_dir("emulator-quickstart");
  auto before = namespaces();
  auto history = dir / "history.jsonl";
  auto result = run_ernicctl({"run", kQuickstart, "--runs-dir", (dir / "runs").string(), "--set",
                              "history.path=" + history.string()},
                             {}, std::chrono::seconds(300));
  INFO(result.err.substr(result.err.size() > 3000 ? result.err.size() - 3000 : 0));
  REQUIRE(result.exit_code == 0);
  json record = last_record(history);
  const json& run = record["ernicctl"];
  const json& points = run["points"];
  // 36 bandwidth + 36 latency + 3 reliability + 1 sustained + 3 iperf3 points.
  REQUIRE(points.size() == 79);
  for (const auto& point : points) {
    INFO(point["id"]);
    CHECK(point["status"] == "passed");
  }
  std::filesystem::path run_dir = run["run_dir"].get<std::string>();
  // bw, lat and reliability ran Debian's perftest on the instances' verbs devices, under the
  // environment that points libibverbs at them: their step logs show the commands they ran.
  for (std::size_t i = 0; i < 75; ++i) {
    const json& point = points[i];
    INFO(point["id"]);
    const std::string program = fmt::format("ib_{}_{}", point["params"]["verb"].get<std::string>(),
                                            point["params"]["mode"].get<std::string>());
    CHECK(point["measured_by"] == "perftest");
    CHECK_THAT(point["commands"]["client"].get<std::string>(),
               Contains("SYSFS_PATH=") && Contains(" " + program + " -d ernic_2 -x 0 "));
    const std::string log = ernic::read_file_text(run_dir / point["logs"][0].get<std::string>());
    CHECK_THAT(log, Contains(" " + program + " -d ernic_1 -x 0 ") &&
                        Contains(" " + program + " -d ernic_2 -x 0 "));
    CHECK_FALSE(log.find(" perf ") != std::string::npos);
  }
  CHECK(points[72]["samples"].size() == 5);  // reliability: 5 repetitions
  CHECK_FALSE(run["tools"]["perftest"].get<std::string>().empty());
  // Every figure carries its rung: perftest's time to its first table row is rung 2 within an
  // execution point; the sustained point is rung 4 and says how much it drifted.
  CHECK(points[0]["rung"] == 3);
  CHECK(points[0]["metric_rungs"]["time_to_first_row_ms"] == 2);
  CHECK(points[0]["samples"][0]["metrics"]["time_to_first_row_ms"].get<double>() > 0);
  const json& sustained = points[75];
  REQUIRE(sustained["benchmark"] == "sustained");
  CHECK(sustained["rung"] == 4);
  // Its per-second rows come from the load generator, which the scenario chose for it.
  CHECK(sustained["measured_by"] == "ernicctl load generator");
  CHECK_THAT(
      sustained["commands"]["client"].get<std::string>(),
      Contains("perf write_bw --socket") && Contains("-D 6") && Contains("--report-per-second"));
  CHECK(sustained["samples"][0]["distributions"]["bw_GBs"]["values"].size() == 4);
  double drift = sustained["summary"]["bw_drift"]["median"];
  CHECK(drift > 0.2);  // a ratio of two one-second rates: loose, a loaded machine swings
  CHECK(drift < 5.0);
  CHECK(sustained["summary"]["bw_worst_interval_GBs"]["median"].get<double>() > 0);
  // Only rung 3 feeds rocm-ernic's series: the sustained point's 64 KiB write is not in them.
  CHECK(record["series"]["bandwidth"]["65536"].get<double>() ==
        Approx(points[4]["summary"]["bw_peak_GBs"]["median"].get<double>()));
  for (const char* series : {"bandwidth", "latency"}) {
    for (const char* size : {"4096", "65536", "1048576"}) {
      INFO(series << " " << size);
      CHECK(record["series"][series][size].get<double>() > 0);
    }
  }
  CHECK(record["badges"]["rdma_bw_GBs"].get<double>() > 0);
  CHECK(record["badges"]["tcp_bw_GBs"].get<double>() > 0);
  CHECK(run["emulator"]["kind"] == "embedded");
  REQUIRE(run["emulator"]["instances"].size() == 2);
  CHECK(run["emulator"]["instances"][0]["role"] == "manager");
  // Each instance's final stats and log are kept in the run directory.
  for (const auto& instance : run["emulator"]["instances"]) {
    std::ifstream stats(run_dir / "emulator" / instance["stats"].get<std::string>());
    std::string text((std::istreambuf_iterator<char>(stats)), std::istreambuf_iterator<char>());
    CHECK_THAT(text, Contains("bytes_sent : "));
    CHECK(std::filesystem::exists(run_dir / "emulator" / instance["log"].get<std::string>()));
  }
  // Nothing left: instances, load generators, namespaces, socket directory.
  std::string token = run["run_token"];
  CHECK(processes_mentioning("ernic-" + token) == 0);
  CHECK_FALSE(std::filesystem::exists(std::filesystem::temp_directory_path() / ("ernic-" + token)));
  CHECK(namespaces() == before);
}

TEST_CASE("an emulator instance that dies mid-point stops the run within seconds") {
  auto dir = fresh_dir("emulator-death");
  auto history = dir / "history.jsonl";
  auto process = start_quickstart(dir, history, {"benchmarks.bw.params.iterations=20000"});
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  REQUIRE(process->wait_for_line(std::regex(R"(\[1/79\] bw)"), deadline));
  pid_t worker = 0;
  while (worker == 0 && std::chrono::steady_clock::now() < deadline) {
    worker = child_mentioning(process->pid(), "tcp:worker");
  }
  REQUIRE(worker != 0);
  REQUIRE(::kill(worker, SIGKILL) == 0);
  auto killed = std::chrono::steady_clock::now();
  REQUIRE(process->wait_until(killed + std::chrono::seconds(20), false) ==
          ernic::Subprocess::WaitEnd::kExited);
  process->finish_output();
  INFO(process->stderr_text());
  CHECK(std::chrono::steady_clock::now() - killed < std::chrono::seconds(10));
  CHECK(process->exit_code() == 1);
  json record = last_record(history);
  const json& run = record["ernicctl"];
  CHECK(run["status"] == "failed");
  CHECK_THAT(run["error"].get<std::string>(),
             Contains("instance 2 (worker") && Contains("last log lines"));
  CHECK(run["points"][77]["status"] == "skipped");
  CHECK(processes_mentioning("ernic-" + run["run_token"].get<std::string>()) == 0);
}

TEST_CASE("two quickstart runs at the same time both pass, on ports of their own") {
  auto dir = fresh_dir("emulator-quickstart-twice");
  // Shorter sweeps; the embedded points are the ones that share this machine's ports.
  auto run_one = [&](const std::string& name, Invocation& result) {
    result = run_ernicctl({"run", kQuickstart, "--runs-dir", (dir / name).string(), "--set",
                           "history.path=" + (dir / (name + ".jsonl")).string(), "--set",
                           "benchmarks.bw.params.size={from: 4KiB, to: 64KiB, factor: 2}", "--set",
                           "benchmarks.lat.params.size={from: 4KiB, to: 64KiB, factor: 2}"},
                          {}, std::chrono::seconds(300));
  };
  Invocation first, second;
  std::thread a(run_one, "a", std::ref(first));
  std::thread b(run_one, "b", std::ref(second));
  a.join();
  b.join();
  INFO(first.err.substr(first.err.size() > 2000 ? first.err.size() - 2000 : 0));
  INFO(second.err.substr(second.err.size() > 2000 ? second.err.size() - 2000 : 0));
  REQUIRE(first.exit_code == 0);
  REQUIRE(second.exit_code == 0);
  // The embedded servers of the two runs listened on different ports.
  auto ports_of = [](const json& record) {
    std::set<std::string> ports;
    for (const auto& point : record["ernicctl"]["points"]) {
      std::string server = point["commands"]["server"].get<std::string>();
      auto at = server.find(" -p ");
      const bool embedded = server.find(" perf ") != std::string::npos ||
                            server.find("SYSFS_PATH=") != std::string::npos;
      if (embedded && at != std::string::npos) {
        ports.insert(server.substr(at + 4, server.find(' ', at + 4) - at - 4));
      }
    }
    return ports;
  };
  auto ports_a = ports_of(last_record(dir / "a.jsonl"));
  auto ports_b = ports_of(last_record(dir / "b.jsonl"));
  CHECK(ports_a.size() > 10);
  std::vector<std::string> shared;
  std::set_intersection(ports_a.begin(), ports_a.end(), ports_b.begin(), ports_b.end(),
                        std::back_inserter(shared));
  CHECK(shared.empty());
}

TEST_CASE("Ctrl-C while real perftest runs leaves no perftest process and no provider state") {
  auto dir = fresh_dir("perftest-sigint");
  auto history = dir / "history.jsonl";
  // The first point (ib_send_bw at 4 KiB) made long enough to be interrupted in its transfer.
  auto process = start_quickstart(
      dir, history, {"benchmarks.bw.params.iterations=50000000", "benchmarks.bw.timeout=300s"});
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  REQUIRE(process->wait_for_line(std::regex(R"(\[1/79\] bw)"), deadline));
  while (processes_mentioning("ib_send_bw") < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  REQUIRE(processes_mentioning("ib_send_bw") >= 2);  // server and client, through the provider
  REQUIRE(::kill(process->pid(), SIGINT) == 0);
  REQUIRE(process->wait_until(std::chrono::steady_clock::now() + std::chrono::seconds(15), false) ==
          ernic::Subprocess::WaitEnd::kExited);
  process->finish_output();
  INFO(process->stderr_text());
  CHECK(process->exit_code() == 130);
  CHECK(processes_mentioning("ib_send_bw") == 0);
  const std::string token = last_record(history)["ernicctl"]["run_token"].get<std::string>();
  CHECK(processes_mentioning("ernic-" + token) == 0);
  // The instances' directory held their sockets and the verbs devices' sysfs trees.
  CHECK_FALSE(std::filesystem::exists(std::filesystem::temp_directory_path() / ("ernic-" + token)));
}
