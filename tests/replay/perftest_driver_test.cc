// The perftest, ibv_rc_pingpong and fio modules driven by the real executor (server start,
// readiness by listening port, client, parse, server collected) on local hosts, with the
// replay program standing in for the RDMA tools: recorded outputs, real processes and sockets.
#include <set>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "base/status.h"
#include "builtin_platform.h"
#include "plan/plan.h"
#include "replay_tools.h"
#include "run/executor.h"
#include "scenario/platform.h"
#include "scenario/scenario_loader.h"

namespace ernic {
namespace {

using testing::ReplayTools;
using testing::ScopedReplayEnvironment;

std::string perftest_scenario() {
  return std::string(R"(version: 1
name: replayed-perftest
runner: local
hosts:
  - {name: server, provider: local}
  - {name: client, provider: local}
benchmarks:
  - name: rdma
    tool: perftest
    server: server
    client: client
    timeout: 20s
    params:
      verb: [send, write, read]
      mode: [bw, lat]
      size: 64KiB
history:
  enabled: false
)");
}

struct ReplayedRun {
  RunResult result;
  const PointResult& point(const std::string& id_prefix) const {
    for (const auto& each : result.points) {
      if (each.point->id.starts_with(id_prefix)) {
        return each;
      }
    }
    FAIL("no point " << id_prefix);
    throw std::logic_error("unreachable");
  }
};

TEST_CASE("perftest module through the executor: results and every kind of failure",
          "[replay][driver]") {
  ReplayTools tools;
  // send bw: a complete run on both sides.
  tools.record_sample("ib_send_bw.server.stdout", "ib_send_bw_s65536.server.txt");
  tools.record_sample("ib_send_bw.client.stdout", "ib_send_bw_s65536.client.txt");
  // write bw: a partial sweep table, then a completion error and exit status 1.
  std::string partial =
      testing::read_text_file(std::string(ERNIC_SAMPLES_DIR) + "/ib_write_bw_a_n20.client.txt");
  partial = partial.substr(0, partial.find(" 8192 "));  // header and rows 2 .. 4096
  tools.record("ib_write_bw.client.stdout", partial);
  tools.record("ib_write_bw.client.stderr",
               " Completion with error at client\n Failed status 12: wr_id 0 syndrom 0x81\n"
               "scnt=20, ccnt=0\n");
  tools.record("ib_write_bw.client.exit", "1");
  // read bw: the client cannot reach the server and exits 1.
  tools.record_sample("ib_read_bw.client.stderr", "ib_write_bw_error_no_server.client.txt");
  tools.record("ib_read_bw.client.exit", "1");
  // send lat: fine; write lat: the client prints nothing at all and exits 0.
  tools.record_sample("ib_send_lat.server.stdout", "ib_send_lat_s64.server.txt");
  tools.record_sample("ib_send_lat.client.stdout", "ib_send_lat_s64.client.txt");
  tools.record_sample("ib_write_lat.server.stdout", "ib_write_lat_s64.server.txt");
  // read lat: the server prints no table (as ib_read_lat's server does), the client does.
  tools.record_sample("ib_read_lat.server.stdout", "ib_read_lat_s64.server.txt");
  tools.record_sample("ib_read_lat.client.stdout", "ib_read_lat_s64.client.txt");
  ScopedReplayEnvironment environment(tools);

  // The recorded latency outputs are for 64-byte messages.
  const Platform platform = builtin_platform();
  LoadResult loaded =
      load_scenario_text(platform, perftest_scenario(), "replayed-perftest.yaml", {});
  INFO((loaded.diagnostics.empty() ? "" : loaded.diagnostics.front().format()));
  REQUIRE(loaded.scenario.has_value());
  Scenario scenario = *loaded.scenario;
  Plan plan = make_plan(scenario, platform);
  REQUIRE(plan.points.size() == 6);
  for (auto& point : plan.points) {
    if (point.params.text("mode") == "lat") {
      point.params.set("size", "64");
    }
  }
  auto runs = std::filesystem::path(tools.script_dir()).parent_path() / "runs";
  auto status = make_status(true);
  RealCommandRunner runner;
  Executor executor(plan, platform, runner,
                    RunOptions{.runs_dir = runs, .keep = KeepPolicy::kNever}, *status);
  ReplayedRun run{executor.run()};
  CHECK(run.result.status == RunStatus::kFailed);
  CHECK(run.result.fatal_error.empty());
  REQUIRE(run.result.points.size() == 6);

  const PointResult& send_bw = run.point("rdma[verb=send,mode=bw");
  INFO(send_bw.reason);
  REQUIRE(send_bw.status == PointStatus::kPassed);
  REQUIRE(send_bw.samples.size() == 1);
  CHECK(send_bw.samples[0].metrics.at("bw_peak_GBs") == Approx(9.86 * 1048576 / 1e9));
  CHECK(send_bw.samples[0].metrics.at("bw_avg_GBs") == Approx(8.29 * 1048576 / 1e9));
  CHECK(send_bw.server_command ==
        fmt::format("ib_send_bw -s 65536 -n 1000 --report_gbits -p {}", send_bw.port));
  CHECK(send_bw.client_command ==
        fmt::format("ib_send_bw -s 65536 -n 1000 --report_gbits -p {} 127.0.0.1", send_bw.port));

  const PointResult& write_bw = run.point("rdma[verb=write,mode=bw");
  CHECK(write_bw.status == PointStatus::kFailed);
  CHECK(write_bw.samples.empty());
  CHECK_THAT(write_bw.reason,
             Catch::StartsWith("client: line 35: Completion with error at client") &&
                 Catch::Contains("IBV_WC_RETRY_EXC_ERR") && Catch::Contains("(exit status 1)"));
  // The partial table is kept in the point's details.
  CHECK(write_bw.details.at("client").at("tables").at(0).at("rows").size() == 12);

  const PointResult& read_bw = run.point("rdma[verb=read,mode=bw");
  CHECK(read_bw.status == PointStatus::kFailed);
  CHECK_THAT(read_bw.reason, Catch::StartsWith("client: line 1: Couldn't connect to") &&
                                 Catch::Contains("(exit status 1)"));

  const PointResult& send_lat = run.point("rdma[verb=send,mode=lat");
  INFO(send_lat.reason);
  REQUIRE(send_lat.status == PointStatus::kPassed);
  CHECK(send_lat.samples[0].metrics.at("lat_typical_us") == Approx(23112.66));
  CHECK(send_lat.samples[0].metrics.at("lat_max_us") == Approx(52816.43));
  CHECK(send_lat.server_command == fmt::format("ib_send_lat -s 64 -n 1000 -p {}", send_lat.port));

  const PointResult& write_lat = run.point("rdma[verb=write,mode=lat");
  CHECK(write_lat.status == PointStatus::kFailed);
  CHECK_THAT(write_lat.reason, Catch::StartsWith("client: no result table") &&
                                   Catch::Contains("the output is empty"));

  const PointResult& read_lat = run.point("rdma[verb=read,mode=lat");
  INFO(read_lat.reason);
  REQUIRE(read_lat.status == PointStatus::kPassed);
  CHECK(read_lat.samples[0].metrics.at("lat_min_us") == Approx(219.47));

  // Every command ran for real, each server before its client, on the point's own port.
  // Besides the preflight's version probe (`ib_send_bw --version`).
  std::vector<std::string> invocations;
  for (const std::string& invocation : tools.invocations()) {
    if (invocation.find("--version") == std::string::npos) {
      invocations.push_back(invocation);
    }
  }
  REQUIRE(invocations.size() == 12);
  std::set<std::uint16_t> ports;
  for (std::size_t i = 0; i < plan.points.size(); ++i) {
    // Local servers take their ports from the run's block, below the ephemeral range.
    CHECK(run.result.points[i].port >= PortBlock::kFirstPort);
    ports.insert(run.result.points[i].port);
    std::string port_text = std::to_string(run.result.points[i].port);
    CHECK_THAT(invocations[2 * i],
               Catch::Contains(" server ") && Catch::EndsWith("-p " + port_text));
    CHECK_THAT(invocations[2 * i + 1],
               Catch::Contains(" client ") && Catch::EndsWith("-p " + port_text + " 127.0.0.1"));
  }
  CHECK(ports.size() == plan.points.size());
  std::error_code ignored;
  std::filesystem::remove_all(runs, ignored);
}

TEST_CASE("pingpong and fio modules through the executor", "[replay][driver]") {
  ReplayTools tools;
  tools.record("ibv_rc_pingpong.server.stdout",
               "  local address:  LID 0x0000, QPN 0x000011, PSN 0xd24ed4, GID fe80::1\n"
               "  remote address: LID 0x0000, QPN 0x000012, PSN 0xdedad9, GID fe80::1\n"
               "819200 bytes in 0.01 seconds = 1024.00 Mbit/sec\n"
               "100 iters in 0.01 seconds = 64.00 usec/iter\n");
  tools.record("ibv_rc_pingpong.client.stdout",
               "  local address:  LID 0x0000, QPN 0x000012, PSN 0xdedad9, GID fe80::1\n"
               "  remote address: LID 0x0000, QPN 0x000011, PSN 0xd24ed4, GID fe80::1\n"
               "819200 bytes in 0.01 seconds = 1000.50 Mbit/sec\n"
               "100 iters in 0.01 seconds = 65.50 usec/iter\n");
  tools.record_sample("fio.client.stdout", "fio-3.33-json-with-note-prefix.txt");
  ScopedReplayEnvironment environment(tools);

  std::string text = R"(version: 1
name: replayed-pingpong-fio
runner: local
hosts:
  - {name: server, provider: local}
  - {name: client, provider: local}
benchmarks:
  - name: pp
    tool: pingpong
    server: server
    client: client
    timeout: 20s
    params: {size: 4KiB, iterations: 100}
  - name: disk
    tool: fio
    client: client
    timeout: 20s
    params: {filename: /dev/null, bs: [4KiB]}
history:
  enabled: false
)";
  const Platform platform = builtin_platform();
  LoadResult loaded = load_scenario_text(platform, text, "replayed.yaml", {});
  INFO((loaded.diagnostics.empty() ? "" : loaded.diagnostics.front().format()));
  REQUIRE(loaded.scenario.has_value());
  Scenario scenario = *loaded.scenario;
  Plan plan = make_plan(scenario, platform);
  REQUIRE(plan.points.size() == 2);
  auto runs = std::filesystem::path(tools.script_dir()).parent_path() / "runs";
  auto status = make_status(true);
  RealCommandRunner runner;
  Executor executor(plan, platform, runner,
                    RunOptions{.runs_dir = runs, .keep = KeepPolicy::kNever}, *status);
  RunResult result = executor.run();
  INFO(result.points[0].reason << " / " << result.points[1].reason);
  REQUIRE(result.status == RunStatus::kPassed);
  CHECK(result.points[0].samples.at(0).metrics.at("bw_Mbps") == Approx(1000.5));
  CHECK(result.points[0].samples.at(0).metrics.at("lat_per_iter_us") == Approx(65.5));
  CHECK(result.points[0].client_command ==
        fmt::format("ibv_rc_pingpong -n 100 -s 4096 -p {} 127.0.0.1", result.points[0].port));
  CHECK(result.points[1].samples.at(0).metrics.at("iops") == Approx(476118.226321));
  CHECK(result.points[1].client_command ==
        "fio --name=ernic --filename=/dev/null --rw=randread --bs=4096 --size=67108864 "
        "--iodepth=32 --ioengine=libaio --direct=1 --runtime=10 --time_based --group_reporting "
        "--output-format=json --status-interval=1");
  std::error_code ignored;
  std::filesystem::remove_all(runs, ignored);
}

}  // namespace
}  // namespace ernic
