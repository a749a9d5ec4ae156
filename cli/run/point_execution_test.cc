// What the executor records about each tenant and each client's output, run by the real
// executor on the platform of fakes: every tenant's hosts and command lines in the record (the
// single-tenant fields unchanged), and the arrival time of perftest's first table row (rung 2).
#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "history/record.h"
#include "run/testing/perf_tables.h"
#include "run/testing/run_harness.h"

namespace ernic {
namespace {

using testing::Scripted;

std::string two_iperf3_tenants() {
  return R"(version: 1
name: tenants
hosts:
  - {name: a1, provider: netns}
  - {name: b1, provider: netns}
  - {name: a2, provider: netns}
  - {name: b2, provider: netns}
benchmarks:
  - name: tcp
    tool: iperf3
    tenants:
      - {name: left, server: a1, client: b1}
      - {name: right, server: a2, client: b2}
    params: {duration: 1s}
    timeout: 5s
  - {name: solo, tool: iperf3, server: a1, client: b2, params: {duration: 1s}, timeout: 5s}
history: {enabled: false}
)";
}

TEST_CASE("record: every tenant's hosts and command lines, keyed by tenant", "[tenants]") {
  testing::RunHarness h(two_iperf3_tenants());
  RunResult result = h.run();
  INFO(result.fatal_error);
  REQUIRE(result.status == RunStatus::kPassed);
  HistoryRecord record = build_history_record(*h.scenario, result);
  const PointRecord& tcp = record.ernicctl->points[0];
  const std::vector<std::uint16_t>& ports = h.plan.points[0].ports;
  REQUIRE(ports.size() == 2);

  REQUIRE(tcp.tenants.size() == 2);
  const TenantRecord& left = tcp.tenants.at("left");
  const TenantRecord& right = tcp.tenants.at("right");
  CHECK(left.hosts == std::map<std::string, std::string>{{"server", "a1"}, {"client", "b1"}});
  CHECK(right.hosts == std::map<std::string, std::string>{{"server", "a2"}, {"client", "b2"}});
  // Each tenant's own lines: its server's address and its own port.
  CHECK_THAT(right.commands.at("client"), Catch::Contains("-c addr-a2"));
  CHECK_THAT(right.commands.at("client"), Catch::Contains(fmt::format("-p {}", ports[1])));
  CHECK_THAT(right.commands.at("server"), Catch::Contains(fmt::format("-p {}", ports[1])));
  CHECK_THAT(left.commands.at("client"), Catch::Contains("-c addr-a1"));
  CHECK(left.commands.at("client") != right.commands.at("client"));
  // The old fields keep their meaning: the first tenant's.
  CHECK(tcp.hosts == left.hosts);
  CHECK(tcp.commands == left.commands);

  // It reads back as written; a single-tenant point has no `tenants` key at all.
  nlohmann::json json = record;
  const nlohmann::json& points = json["ernicctl"]["points"];
  CHECK(points[0]["tenants"]["right"]["hosts"]["client"] == "b2");
  CHECK_FALSE(points[1].contains("tenants"));
  CHECK(points[1]["hosts"] == nlohmann::json{{"server", "a1"}, {"client", "b2"}});
  CHECK_THAT(points[1]["commands"]["client"].get<std::string>(), Catch::Contains("-c addr-a1"));
  HistoryRecord again = read_history_record(json);
  CHECK(again.ernicctl->points[0].tenants.at("right").commands == right.commands);
  CHECK(again.ernicctl->points[1].tenants.empty());
  CHECK(nlohmann::json(again).dump() == json.dump());
}

TEST_CASE("record: a tenants entry that is not an object is named by history validate",
          "[tenants]") {
  nlohmann::json point = {{"id", "p"}, {"status", "passed"}, {"tenants", {{"t1", 3}}}};
  nlohmann::json json = {{"generated", "2026-12-01 00:00:00 UTC"},
                         {"sha", "1"},
                         {"run_id", "1"},
                         {"node", "n"},
                         {"series", nlohmann::json::object()},
                         {"badges", nlohmann::json::object()},
                         {"ernicctl", {{"schema", 1}, {"points", {point}}}}};
  std::vector<std::string> problems;
  HistoryRecord record = read_history_record(json, &problems);
  CHECK(record.ernicctl->points[0].tenants.empty());
  CHECK(std::find(problems.begin(), problems.end(),
                  "ernicctl.points[0].tenants.t1 must be an object") != problems.end());
}

// perftest between two fake hosts whose client prints its banner at once, its table's one row
// 200 ms after it started and the closing dashes at 500 ms.
TEST_CASE("perftest: the time to the first table row is when its line arrived",
          "[perftest][rung]") {
  testing::RunHarness h(R"(version: 1
name: first-row
hosts:
  - {name: s, provider: netns}
  - {name: c, provider: netns}
benchmarks:
  - name: bw
    tool: perftest
    server: s
    client: c
    params: {verb: write, mode: bw, size: 64KiB, iterations: 100}
    timeout: 10s
history: {enabled: false}
)");
  h.world.script = [](const std::string& host, const CommandSpec&) {
    Scripted scripted;
    scripted.result.exit_code = 0;
    if (host == "c") {
      scripted.timed_stdout = {{std::chrono::milliseconds(0), testing::bandwidth_head()},
                               {std::chrono::milliseconds(200), testing::bandwidth_row(2)},
                               {std::chrono::milliseconds(500), emu::perf::dashes()}};
    }
    return scripted;
  };
  RunResult result = h.run();
  INFO(result.fatal_error << " " << result.points[0].reason);
  REQUIRE(result.status == RunStatus::kPassed);
  const Sample& sample = result.points[0].samples.at(0);
  // No earlier than the row was printed, before the output after it.
  double first_row = sample.metrics.at("time_to_first_row_ms");
  CHECK(first_row >= 200);
  CHECK(first_row < 500);
  CHECK(sample.metrics.at("bw_avg_GBs") == Approx(2.0));
  // Rung 2 in the record, beside the execution point's figures.
  HistoryRecord record = build_history_record(*h.scenario, result);
  const PointRecord& point = record.ernicctl->points[0];
  CHECK(point_rung(point) == Rung::kExecution);
  CHECK(metric_rung(point, "time_to_first_row_ms") == Rung::kRuntimeStart);
  CHECK(std::string(metric_qualifier("time_to_first_row_ms")) == "upper bound");
}

}  // namespace
}  // namespace ernic
