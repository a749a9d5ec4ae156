// What the executor records about each tenant and each client's output, run by the real
// executor on the platform of fakes: every tenant's hosts and command lines in the record (the
// single-tenant fields unchanged), the arrival time of perftest's first table row (rung 2), and
// a repetition run again after a failure its tool declared retryable.
#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <fstream>
#include <functional>
#include <iterator>

#include "run/record.h"
#include "run/testing/perf_tables.h"
#include "run/testing/run_harness.h"
#include "run/testing/step_log_sides.h"
#include "samples.h"

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

TEST_CASE("record: each point names the program that measured it", "[perftest][verbs]") {
  testing::RunHarness h(R"(version: 1
name: measured-by
emulator: {kind: embedded, instances: 2}
hosts:
  - {name: g1, provider: embedded, instance: 1}
  - {name: g2, provider: embedded, instance: 2}
  - {name: s, provider: netns}
  - {name: c, provider: netns}
benchmarks:
  - {name: real, tool: perftest, server: g1, client: g2,
     params: {verb: write, mode: bw, size: 64KiB, iterations: 10}}
  - {name: generated, tool: perftest, server: g1, client: g2,
     params: {program: load-generator, verb: write, mode: bw, size: 64KiB, iterations: 10}}
  - {name: tcp, tool: iperf3, server: s, client: c, params: {duration: 1s}, timeout: 5s}
history: {enabled: false}
)");
  h.world.script = [](const std::string&, const CommandSpec& spec) {
    Scripted scripted;
    scripted.result.exit_code = 0;
    if (spec.argv[0] == "iperf3" && spec.argv[1] == "-c") {
      scripted.result.out = testing::read_sample("iperf3_netns.client.json");
    } else if (spec.argv.back().starts_with("addr-")) {
      scripted.result.out = testing::bandwidth_table(1);
    } else if (spec.argv == std::vector<std::string>{"ib_send_bw", "--version"}) {
      scripted.result.out = "Version: 6.06\n";
    }
    return scripted;
  };
  RunResult result = h.run();
  INFO(result.fatal_error);
  CAPTURE(result.points[0].reason, result.points[1].reason, result.points[2].reason);
  REQUIRE(result.status == RunStatus::kPassed);
  HistoryRecord record = build_history_record(*h.scenario, result);
  const auto& points = record.ernicctl->points;
  REQUIRE(points.size() == 3);
  CHECK(points[0].measured_by == std::optional<std::string>("perftest"));
  CHECK_THAT(points[0].commands.at("client"),
             Catch::StartsWith("SYSFS_PATH=") && Catch::Contains(" ib_write_bw -d ernic_2 -x 0 "));
  CHECK(points[1].measured_by == std::optional<std::string>("ernicctl load generator"));
  CHECK_THAT(points[1].commands.at("client"), Catch::Contains(" perf write_bw --socket "));
  // A tool with one program says nothing, as records written before the field.
  CHECK_FALSE(points[2].measured_by.has_value());
  CHECK(record.ernicctl->tools.at("perftest") == "6.06");
  nlohmann::json json = record;
  CHECK(json["ernicctl"]["points"][0]["measured_by"] == "perftest");
  CHECK_FALSE(json["ernicctl"]["points"][2].contains("measured_by"));
  HistoryRecord again = read_history_record(json);
  CHECK(again.ernicctl->points[1].measured_by == points[1].measured_by);
  CHECK_FALSE(again.ernicctl->points[2].measured_by.has_value());
}

// One perftest point `bw` with `params`, server on fake host s, client on fake host c.
std::string perftest_from_s_to_c(const std::string& params) {
  return fmt::format(R"(version: 1
name: perftest
hosts:
  - {{name: s, provider: netns}}
  - {{name: c, provider: netns}}
benchmarks:
  - name: bw
    tool: perftest
    server: s
    client: c
    params: {}
    timeout: 10s
history: {{enabled: false}}
)",
                     params);
}

// perftest between two fake hosts whose client prints its banner at once, its table's one row
// 200 ms after it started and the closing dashes at 500 ms.
TEST_CASE("perftest: the time to the first table row is when its line arrived",
          "[perftest][rung]") {
  testing::RunHarness h(
      perftest_from_s_to_c("{verb: write, mode: bw, size: 64KiB, iterations: 100}"));
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

// perftest send bandwidth between two fake hosts whose commands print, attempt by attempt, what
// `attempt(n)` gives: {server, client}. Counts the attempts (server starts).
struct RetryRun {
  testing::RunHarness h{perftest_from_s_to_c("{verb: send, mode: bw, size: 64KiB}")};
  testing::RecordingStatus status;
  int attempts = 0;

  RunResult run(std::function<std::pair<CommandResult, CommandResult>(int)> attempt) {
    h.world.script = [this, attempt](const std::string& host, const CommandSpec&) {
      if (host == "s") {
        ++attempts;
      }
      auto [server, client] = attempt(attempts);
      Scripted scripted;
      scripted.result = host == "s" ? server : client;
      scripted.logs_result = true;
      return scripted;
    };
    return h.run({}, &status);
  }
  std::string log_text(const RunResult& result) const {
    REQUIRE(result.points[0].logs.size() == 1);
    std::ifstream in(result.points[0].logs[0]);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
};

std::pair<CommandResult, CommandResult> passing_send_bw() {
  CommandResult server;
  server.exit_code = 0;
  server.out = testing::read_sample("ib_send_bw_s65536.server.txt");
  CommandResult client;
  client.exit_code = 0;
  client.out = testing::read_sample("ib_send_bw_s65536.client.txt");
  return {server, client};
}

std::size_t occurrences(const std::string& text, const std::string& part) {
  std::size_t count = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) {
    ++count;
  }
  return count;
}

constexpr const char* kCalibrationFailure =
    "server: perftest could not calibrate the CPU clock (r^2 0.66 < 0.9; a busy or virtualised "
    "CPU): Can't produce a report";

TEST_CASE("retry: a clock calibration failure runs the repetition again, visibly",
          "[retry][perftest]") {
  testing::CalibrationFlake flake;
  RetryRun retry;
  RunResult result = retry.run([&](int attempt) {
    return attempt == 1 ? std::pair(flake.server, flake.client) : passing_send_bw();
  });
  INFO(result.fatal_error << " " << result.points[0].reason);
  REQUIRE(result.status == RunStatus::kPassed);
  CHECK(retry.attempts == 2);
  const PointResult& point = result.points[0];
  REQUIRE(point.samples.size() == 1);
  const Sample& sample = point.samples[0];
  CHECK(sample.metrics.contains("bw_avg_GBs"));
  REQUIRE(sample.retries.size() == 1);
  CHECK_THAT(sample.retries[0], Catch::StartsWith(kCalibrationFailure));

  // The progress line says so.
  std::vector<std::string> warnings = retry.status.warnings();
  REQUIRE(warnings.size() == 1);
  CHECK_THAT(warnings[0], Catch::Contains("retrying: perftest could not calibrate the CPU clock"));

  // One step log keeps both attempts, the failed one first.
  std::string log = retry.log_text(result);
  CHECK(occurrences(log, "# server on ") == 2);
  CHECK(occurrences(log, "Correlation coefficient r^2: 0.658888 < 0.9") == 1);
  auto failed = log.find(std::string("# point failed: ") + kCalibrationFailure);
  auto retrying = log.find("# retrying: perftest could not calibrate the CPU clock (retry 1 of");
  auto passed = log.find("# point passed");
  CHECK(failed < retrying);
  CHECK(retrying < passed);
  CHECK(passed != std::string::npos);

  // The record notes the retry, and reads it back.
  HistoryRecord record = build_history_record(*retry.h.scenario, result);
  nlohmann::json json = record;
  const nlohmann::json& recorded = json["ernicctl"]["points"][0]["samples"][0];
  REQUIRE(recorded.contains("retries"));
  CHECK_THAT(recorded["retries"][0].get<std::string>(), Catch::StartsWith(kCalibrationFailure));
  CHECK(read_history_record(json).ernicctl->points[0].samples[0].retries ==
        record.ernicctl->points[0].samples[0].retries);
}

TEST_CASE("retry: a calibration failure every time fails the point, naming the cause",
          "[retry][perftest]") {
  testing::CalibrationFlake flake;
  RetryRun retry;
  RunResult result = retry.run([&](int) { return std::pair(flake.server, flake.client); });
  REQUIRE(result.status == RunStatus::kFailed);
  const PointResult& point = result.points[0];
  CHECK(point.status == PointStatus::kFailed);
  CHECK_THAT(point.reason, Catch::StartsWith(kCalibrationFailure));
  CHECK_THAT(point.reason, Catch::EndsWith("(after 2 retries)"));
  CHECK(retry.attempts == 3);  // the first attempt and at most two retries
  CHECK(retry.status.warnings().size() == 2);
  CHECK(point.samples.empty());
  CHECK(occurrences(retry.log_text(result), "# server on ") == 3);
  // A record without a retried repetition says nothing of retries.
  nlohmann::json json = build_history_record(*retry.h.scenario, result);
  CHECK(json.dump().find("\"retries\"") == std::string::npos);
}

TEST_CASE("retry: a failure its tool did not declare retryable runs once", "[retry][perftest]") {
  RetryRun retry;
  RunResult result = retry.run([](int) {
    auto [server, client] = passing_send_bw();
    client.exit_code = 1;
    client.out.clear();
    client.err = testing::read_sample("ib_write_bw_error_no_server.client.txt");
    return std::pair(server, client);
  });
  REQUIRE(result.status == RunStatus::kFailed);
  CHECK_THAT(result.points[0].reason, Catch::StartsWith("client: line 1: Couldn't connect to"));
  CHECK_THAT(result.points[0].reason, !Catch::Contains("(after "));
  CHECK(retry.attempts == 1);
  CHECK(retry.status.warnings().empty());
  CHECK(occurrences(retry.log_text(result), "# server on ") == 1);
}

}  // namespace
}  // namespace ernic
