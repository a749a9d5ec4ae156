#include "history/rung.h"

#include <catch2/catch.hpp>

#include "history/history_record.h"

namespace ernic {
namespace {

PointRecord point_with(std::map<std::string, std::string> params,
                       std::map<std::string, double> metrics) {
  PointRecord point{.id = "p",
                    .benchmark = "b",
                    .tool = "perftest",
                    .params = std::move(params),
                    .status = "passed"};
  point.samples.push_back({.rep = 1, .metrics = std::move(metrics)});
  return point;
}

TEST_CASE("the rungs are numbered and named as the methodology's ladder", "[rung]") {
  CHECK(rung_name(Rung::kInit) == std::string("init"));
  CHECK(rung_name(Rung::kRuntimeStart) == std::string("runtime-start"));
  CHECK(rung_name(Rung::kExecution) == std::string("execution"));
  CHECK(rung_name(Rung::kSustained) == std::string("sustained"));
  CHECK(rung_name(Rung::kMultiTenant) == std::string("multi-tenant"));
  for (int n = 1; n <= 5; ++n) {
    REQUIRE(rung_from_number(n));
    CHECK(rung_number(*rung_from_number(n)) == n);
  }
  CHECK_FALSE(rung_from_number(0));
  CHECK_FALSE(rung_from_number(6));
  CHECK(rung_label(Rung::kSustained) == "Rung 4: sustained");
  CHECK(rung_number(kTInitRung) == 1);  // the hosts' T_init
}

TEST_CASE("a plain point is rung 3, its runtime-start metric rung 2", "[rung]") {
  PointRecord point =
      point_with({{"verb", "send"}}, {{"bw_avg_GBs", 3.0}, {"time_to_first_rts_ms", 12.0}});
  CHECK(derive_point_rung(point) == Rung::kExecution);
  CHECK(metric_rung(point, "bw_avg_GBs") == Rung::kExecution);
  CHECK(metric_rung(point, "time_to_first_rts_ms") == Rung::kRuntimeStart);
  CHECK(is_runtime_start_metric("rts_ms"));
  CHECK(is_runtime_start_metric("time_to_rts_ms"));
  CHECK(is_runtime_start_metric("time_to_first_row_ms"));  // perftest's upper bound
  CHECK_FALSE(is_runtime_start_metric("lat_typical_us"));
  CHECK_FALSE(is_runtime_start_metric("parts_ms"));
}

TEST_CASE("a point whose params say sustained is rung 4", "[rung]") {
  CHECK(derive_point_rung(point_with({{"sustained", "true"}, {"duration", "120"}},
                                     {{"bw_avg_GBs", 3.0}})) == Rung::kSustained);
  CHECK(derive_point_rung(point_with({{"sustained", "false"}, {"duration", "120"}},
                                     {{"bw_avg_GBs", 3.0}})) == Rung::kExecution);
}

TEST_CASE("several tenants or a fairness index make a point rung 5", "[rung]") {
  PointRecord tenants = point_with({{"sustained", "true"}}, {{"bw_avg_GBs", 3.0}});
  tenants.samples[0].tenant = 1;
  tenants.samples.push_back({.rep = 1, .metrics = {{"bw_avg_GBs", 2.9}}, .tenant = 2});
  CHECK(derive_point_rung(tenants) == Rung::kMultiTenant);  // above sustained
  PointRecord one_tenant = point_with({}, {{"bw_avg_GBs", 3.0}});
  one_tenant.samples[0].tenant = 1;
  CHECK(derive_point_rung(one_tenant) == Rung::kExecution);
  PointRecord fairness = point_with({}, {{"bw_avg_GBs", 3.0}});
  fairness.fairness = FairnessRecord{.metric = "bw_avg_GBs", .tenants = 2};
  CHECK(derive_point_rung(fairness) == Rung::kMultiTenant);
  PointRecord jain = point_with({}, {{"bw_avg_GBs", 3.0}});
  jain.summary["jain_index"] = Statistics{.n = 1, .median = 0.99};
  CHECK(derive_point_rung(jain) == Rung::kMultiTenant);
  CHECK(derive_metric_rung(Rung::kExecution, "jain_index") == Rung::kMultiTenant);
}

TEST_CASE("the record's rungs win over the rule, and survive writing and reading", "[rung]") {
  PointRecord point = point_with({}, {{"bw_avg_GBs", 3.0}, {"rts_ms", 8.0}});
  point.metrics["lat_typical_us"] = {"us", "lower"};
  assign_rungs(point);
  REQUIRE(point.rung);
  CHECK(*point.rung == Rung::kExecution);
  CHECK(point.metric_rungs == std::map<std::string, Rung>{{"rts_ms", Rung::kRuntimeStart}});

  nlohmann::json json = point;
  CHECK(json["rung"] == 3);
  CHECK(json["metric_rungs"] == nlohmann::json::parse(R"({"rts_ms": 2})"));

  // a record that says rung 4 is believed, although its params do not say sustained
  json["rung"] = 4;
  nlohmann::json record = {{"ernicctl", {{"points", {json}}}}};
  std::vector<std::string> problems;
  HistoryRecord read = read_history_record(record, &problems);
  for (const auto& problem : problems) {
    CHECK(problem.find("points") == std::string::npos);  // (the record's other keys are absent)
  }
  const PointRecord& again = read.points().at(0);
  CHECK(point_rung(again) == Rung::kSustained);
  CHECK(metric_rung(again, "bw_avg_GBs") == Rung::kSustained);
  CHECK(metric_rung(again, "rts_ms") == Rung::kRuntimeStart);
}

TEST_CASE("records without rungs derive them; bad rungs are named", "[rung]") {
  nlohmann::json point = point_with({{"sustained", "true"}}, {{"bw_avg_GBs", 3.0}});
  CHECK_FALSE(point.contains("rung"));  // no rung assigned: none written
  nlohmann::json record = {{"ernicctl", {{"points", {point}}}}};
  HistoryRecord old = read_history_record(record);
  CHECK_FALSE(old.points().at(0).rung);
  CHECK(point_rung(old.points().at(0)) == Rung::kSustained);
  CHECK(nlohmann::json(old.points().at(0)).dump() == point.dump());  // the same bytes again

  record["ernicctl"]["points"][0]["rung"] = 7;
  record["ernicctl"]["points"][0]["metric_rungs"] = {{"rts_ms", "two"}};
  std::vector<std::string> problems;
  HistoryRecord bad = read_history_record(record, &problems);
  CHECK_FALSE(bad.points().at(0).rung);
  CHECK(bad.points().at(0).metric_rungs.empty());
  REQUIRE(problems.size() >= 2);
  CHECK(std::find(problems.begin(), problems.end(),
                  "ernicctl.points[0].rung must be a rung number, 1 to 5") != problems.end());
  CHECK(std::find(problems.begin(), problems.end(),
                  "ernicctl.points[0].metric_rungs.rts_ms must be a rung number, 1 to 5") !=
        problems.end());
}

}  // namespace
}  // namespace ernic
