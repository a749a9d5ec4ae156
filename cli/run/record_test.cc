#include "run/record.h"

#include <catch2/catch.hpp>
#include <cstdlib>

#include "run/testing/test_run.h"

namespace ernic {
namespace {

HostRecord host_with(const std::string& name, const std::string& accelerator) {
  HostRecord host;
  host.name = name;
  if (!accelerator.empty()) {
    host.facts["accelerator"] = accelerator;
  }
  return host;
}

TEST_CASE("the record's accelerator comes from the guests' facts", "[history]") {
  SECTION("no guests: processes on this machine") {
    RunAccelerator none = run_accelerator({host_with("server", ""), host_with("client", "")});
    CHECK(none.name == "none");
    CHECK_FALSE(none.functional_only);
  }
  SECTION("KVM guests measure performance") {
    RunAccelerator kvm = run_accelerator({host_with("g1", "kvm"), host_with("g2", "kvm")});
    CHECK(kvm.name == "kvm");
    CHECK_FALSE(kvm.functional_only);
  }
  SECTION("TCG guests are functional only") {
    RunAccelerator tcg = run_accelerator({host_with("g1", "tcg"), host_with("g2", "tcg")});
    CHECK(tcg.name == "tcg");
    CHECK(tcg.functional_only);
  }
  SECTION("one TCG guest is enough to make the numbers functional only") {
    RunAccelerator mixed =
        run_accelerator({host_with("g1", "kvm"), host_with("g2", "tcg"), host_with("netns", "")});
    CHECK(mixed.name == "mixed");
    CHECK(mixed.functional_only);
  }
}

}  // namespace
}  // namespace ernic

namespace ernic {
namespace {

TEST_CASE("runner auto resolves to rocm-ernic's two classes; other classes stay", "[history]") {
  CHECK(resolve_runner_class("auto", "github-hosted") == "github-hosted");
  CHECK(resolve_runner_class("auto", "self-hosted") == "self-hosted");
  CHECK(resolve_runner_class("auto", "") == "self-hosted");
  CHECK(resolve_runner_class("", "github-hosted") == "github-hosted");
  CHECK(resolve_runner_class("local", "github-hosted") == "local");
  CHECK(resolve_runner_class("self-hosted", "github-hosted") == "self-hosted");
  CHECK(resolve_runner_class("lab-epyc", "") == "lab-epyc");
}

// A passed perftest send bandwidth point at 1 MiB with three samples, a failed iperf3 point.
testing::TestRun two_points() {
  testing::TestRun run;
  run.add("perftest", "bw[verb=send,size=1048576]",
          {{"verb", "send"}, {"mode", "bw"}, {"size", "1048576"}},
          {{{"bw_peak_GBs", 5.0}, {"bw_avg_GBs", 3.0}},
           {{"bw_peak_GBs", 6.0}, {"bw_avg_GBs", 3.0}},
           {{"bw_peak_GBs", 7.0}, {"bw_avg_GBs", 3.0}}});
  run.add("iperf3", "tcp[protocol=tcp]", {{"protocol", "tcp"}, {"reverse", "false"}}, {},
          PointStatus::kFailed, 1, "iperf3 exited 1");
  return run;
}

TEST_CASE("the typed record carries rocm-ernic's figures and reads back unchanged", "[history]") {
  auto fake = two_points();
  HistoryRecord record = build_history_record(fake.scenario, fake.finish(RunStatus::kFailed));
  CHECK(record.runner_class() ==
        (std::string_view(std::getenv("RUNNER_ENVIRONMENT") ? std::getenv("RUNNER_ENVIRONMENT")
                                                            : "") == "github-hosted"
             ? "github-hosted"
             : "self-hosted"));
  CHECK(record.generated == "2026-05-28 20:26:52 UTC");
  CHECK(record.run_id.size() > 0);
  REQUIRE(record.ernicctl);
  const auto& points = record.ernicctl->points;
  REQUIRE(points.size() == 2);
  CHECK(points[0].tool == "perftest");
  CHECK(points[1].tool == "iperf3");
  CHECK(points[0].summary.at("bw_peak_GBs").median == 6.0);
  CHECK(points[0].summary.at("bw_peak_GBs").n == 3);
  CHECK(points[1].summary.empty());  // a failed point has no summary
  CHECK(points[1].reason == "iperf3 exited 1");
  CHECK(record.series.at("bandwidth").at("1048576") == 6.0);
  CHECK(record.badge(Badge::kRdma) == 6.0);
  CHECK_FALSE(record.badge(Badge::kTcp));

  nlohmann::json json = record;
  // rocm-ernic's keys, the three badges always present (null without a value)
  for (const char* key : {"generated", "sha", "run_id", "node", "runner", "series", "badges"}) {
    CHECK(json.contains(key));
  }
  CHECK(
      json["badges"] ==
      nlohmann::json::parse(R"({"rdma_bw_GBs": 6.0, "tcp_bw_GBs": null, "nvmeof_iops_M": null})"));
  CHECK(json["ernicctl"]["points"][1]["reason"] == "iperf3 exited 1");
  CHECK(json["ernicctl"]["points"][0]["commands"] ==
        nlohmann::json::parse(R"({"client": "perftest --client"})"));  // no server command
  CHECK(json["ernicctl"]["points"][0]["samples"][0] ==
        nlohmann::json::parse(R"({"rep": 1, "warm": false, "duration_s": 1.5, "tool_s": 1.0,
                                  "metrics": {"bw_peak_GBs": 5.0, "bw_avg_GBs": 3.0}})"));
  CHECK(json["ernicctl"]["error"].is_null());
  // what is read back serialises to the same bytes
  std::string text = json.dump();
  std::vector<std::string> problems;
  HistoryRecord again = read_history_record(nlohmann::json::parse(text), &problems);
  CHECK(problems.empty());
  CHECK(nlohmann::json(again).dump() == text);
}

TEST_CASE("an interrupted run publishes nothing but keeps its samples", "[history]") {
  auto fake = two_points();
  HistoryRecord record = build_history_record(fake.scenario, fake.finish(RunStatus::kIncomplete));
  CHECK(record.series.empty());
  CHECK_FALSE(record.badge(Badge::kRdma));
  CHECK(record.badges.size() == 3);
  CHECK(record.ernicctl->points[0].samples.size() == 3);
}

TEST_CASE("a scenario that does not publish keeps its series under ernicctl, not the top level",
          "[history]") {
  auto fake = two_points();
  fake.scenario.history.publish = false;
  HistoryRecord record = build_history_record(fake.scenario, fake.finish(RunStatus::kFailed));
  CHECK(record.series.empty());
  CHECK_FALSE(record.badge(Badge::kRdma));  // rocm-ernic's badges are the publisher's alone
  CHECK(record.badges.size() == 3);
  REQUIRE(record.ernicctl);
  CHECK(record.ernicctl->series.at("bandwidth").at("1048576") == 6.0);
  nlohmann::json json = record;
  CHECK(json["series"] == nlohmann::json::object());
  CHECK(json["ernicctl"]["series"]["bandwidth"]["1048576"] == 6.0);
  std::vector<std::string> problems;
  HistoryRecord again = read_history_record(nlohmann::json::parse(json.dump()), &problems);
  CHECK(problems.empty());
  CHECK(again.ernicctl->series == record.ernicctl->series);
  CHECK(nlohmann::json(again).dump() == json.dump());
  // The publisher's record has no ernicctl.series: its figures are at the top level only.
  auto publisher = two_points();
  nlohmann::json published =
      build_history_record(publisher.scenario, publisher.finish(RunStatus::kFailed));
  CHECK_FALSE(published["ernicctl"].contains("series"));
  CHECK(published["series"]["bandwidth"]["1048576"] == 6.0);
}

TEST_CASE("history lines that are not records are named, 1e999 included", "[history]") {
  std::string error;
  CHECK_FALSE(parse_history_line(R"({"badges": {"rdma_bw_GBs": 1e999}})", error));
  CHECK(error.find("not valid JSON") == 0);
  CHECK_FALSE(parse_history_line("[1, 2]", error));
  CHECK(error == "not a JSON object");
  CHECK(parse_history_line(R"({"run_id": "1"})", error));
}

}  // namespace
}  // namespace ernic

namespace ernic {
namespace {

TEST_CASE("each point records its rung; only execution points feed the trend series",
          "[history][rung]") {
  testing::TestRun run;
  run.add("perftest", "soak[verb=send,size=1048576]",
          {{"verb", "send"}, {"mode", "bw"}, {"size", "1048576"}, {"sustained", "true"}},
          {{{"bw_peak_GBs", 5.0}, {"bw_avg_GBs", 3.0}}});
  run.add("perftest", "bw[verb=send,size=4096]",
          {{"verb", "send"}, {"mode", "bw"}, {"size", "4096"}},
          {{{"bw_peak_GBs", 2.0}, {"bw_avg_GBs", 1.0}, {"time_to_first_rts_ms", 12.0}}});
  HistoryRecord record = build_history_record(run.scenario, run.finish());
  const auto& points = record.ernicctl->points;
  REQUIRE(points.size() == 2);
  CHECK(points[0].rung == Rung::kSustained);
  CHECK(points[1].rung == Rung::kExecution);
  // Every declared runtime-start metric: the load generator's and perftest's upper bound.
  CHECK(points[1].metric_rungs ==
        std::map<std::string, Rung>{{"time_to_first_rts_ms", Rung::kRuntimeStart},
                                    {"time_to_first_row_ms", Rung::kRuntimeStart}});
  nlohmann::json json = record;
  CHECK(json["ernicctl"]["points"][0]["rung"] == 4);
  CHECK(json["ernicctl"]["points"][1]["metric_rungs"]["time_to_first_rts_ms"] == 2);
  // the sustained 1 MiB point is not joined to the execution rung's bandwidth series
  CHECK(record.series.at("bandwidth").count("1048576") == 0);
  CHECK(record.series.at("bandwidth").at("4096") == 2.0);
}

}  // namespace
}  // namespace ernic
