// `ernicctl run` end to end with replayed perftest outputs: the figures rocm-ernic publishes
// (series.bandwidth, series.latency, badges.rdma_bw_GBs) come out of the history record.
#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "base/subprocess.h"
#include "replay_tools.h"

namespace ernic {
namespace {

using testing::ReplayTools;

TEST_CASE("ernicctl run publishes perftest's bandwidth, latency and badge", "[replay][driver]") {
  ReplayTools tools;
  // A --report_gbits sweep (every size), relabelled as a send test: each point reads its row.
  std::string sweep = testing::read_text_file(
      std::string(ERNIC_SAMPLES_DIR) + "/perftest-ib_write_bw-a-report_gbits-nvidia-docs.txt");
  sweep.replace(sweep.find("RDMA_Write BW Test"), 18, "Send BW Test");
  tools.record("ib_send_bw.client.stdout", sweep);
  tools.record_sample("ib_send_lat.client.stdout", "ib_send_lat_a_n10.client.txt");

  auto root = std::filesystem::path(tools.script_dir()).parent_path();
  {
    std::ofstream scenario(root / "rdma.yaml");
    scenario << fmt::format(R"(version: 1
name: replayed-rdma
runner: local
hosts:
  - {{name: server, provider: local}}
  - {{name: client, provider: local}}
benchmarks:
  - name: bw
    tool: perftest
    server: server
    client: client
    timeout: 20s
    params: {{verb: send, mode: bw, size: [4KiB, 1MiB, 8MiB], iterations: 5000}}
  - name: lat
    tool: perftest
    server: server
    client: client
    timeout: 20s
    params: {{verb: send, mode: lat, size: 4KiB, iterations: 10}}
history:
  path: {}
)",
                            (root / "history.jsonl").string());
  }
  auto history = root / "history.jsonl";
  SpawnOptions options;
  options.argv = {
      ERNIC_BINARY, "run", (root / "rdma.yaml").string(), "--runs-dir", (root / "runs").string(),
      "--output",   "json"};
  options.env = tools.environment();
  auto process = Subprocess::spawn(options, nullptr);
  REQUIRE(process->wait_until(std::chrono::steady_clock::now() + std::chrono::seconds(60), false) ==
          Subprocess::WaitEnd::kExited);
  process->finish_output();
  INFO(process->stderr_text());
  INFO(process->stdout_text());
  REQUIRE(process->exit_code() == 0);

  std::string line = testing::read_text_file(history);
  nlohmann::json record = nlohmann::json::parse(line.substr(0, line.find('\n')));
  // GB/s = Gb/s / 8, peak column (measured here).
  CHECK(record["series"]["bandwidth"]["4096"].get<double>() == Approx(92.13 / 8));
  CHECK(record["series"]["bandwidth"]["1048576"].get<double>() == Approx(92.40 / 8));
  CHECK_FALSE(record["series"]["bandwidth"].contains("8388608"));  // not a tracked size
  CHECK(record["series"]["latency"]["4096"].get<double>() == Approx(22266.19));
  CHECK(record["badges"]["rdma_bw_GBs"].get<double>() == Approx(92.40 / 8));
  // The points' eight commands and the preflight's version probe.
  CHECK(tools.invocations().size() == 9);
}

}  // namespace
}  // namespace ernic
