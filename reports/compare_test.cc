#include "compare.h"

#include <fmt/format.h>
#include <catch2/catch.hpp>
#include <random>

#include "history/distribution.h"
#include "history/history_file.h"
#include "history/history_record.h"
#include "history/statistics.h"
#include "testing/fixtures.h"

using namespace ernic::reports;
using ernic::reports::testing::TempDir;

namespace {

// Runs of one scenario: bandwidth (higher better) and latency (lower better) with 5 repetitions
// and about 2 % sample noise; the last run's values are scaled by the given factors.
std::filesystem::path write_runs(const TempDir& dir, double bw_factor, double lat_factor,
                                 std::size_t runs = 6, const std::string& runner = "self-hosted") {
  auto file = dir / "history.jsonl";
  std::mt19937 rng(7);
  std::normal_distribution<double> noise(1.0, 0.02);
  for (std::size_t r = 0; r < runs; ++r) {
    bool last = r + 1 == runs;
    std::vector<double> bw, lat;
    for (int i = 0; i < 5; ++i) {
      bw.push_back(2.4 * noise(rng) * (last ? bw_factor : 1));
      lat.push_back(250 * noise(rng) * (last ? lat_factor : 1));
    }
    nlohmann::json points = nlohmann::json::array();
    points.push_back(testing::make_point("bw[verb=send,size=65536]", "perftest",
                                         {{"verb", "send"}, {"size", "65536"}}, "bw_avg_GBs",
                                         "GB/s", "higher", bw));
    points.push_back(testing::make_point("lat[verb=send,size=4096]", "perftest",
                                         {{"verb", "send"}, {"size", "4096"}}, "lat_typical_us",
                                         "us", "lower", lat));
    auto record = testing::make_record(
        std::to_string(900 + r), fmt::format("2026-11-{:02} 03:00:00 UTC", r + 1), runner, points);
    ernic::append_history_record(file, record);
  }
  // runs of another runner class and of another scenario inside the window must not join it
  auto other_point = testing::make_point("bw[verb=send,size=65536]", "perftest",
                                         {{"verb", "send"}, {"size", "65536"}}, "bw_avg_GBs",
                                         "GB/s", "higher", {9, 9, 9, 9, 9});
  ernic::append_history_record(
      file, testing::make_record("800", "2026-11-03 12:00:00 UTC", "github-hosted",
                                 nlohmann::json::array({other_point})));
  ernic::append_history_record(
      file, testing::make_record("801", "2026-11-04 12:00:00 UTC", runner,
                                 nlohmann::json::array({other_point}), "passed", "other-scenario"));
  return file;
}

const MetricComparison* row_for(const Comparison& comparison, const std::string& metric) {
  for (const auto& row : comparison.rows) {
    if (row.metric == metric) {
      return &row;
    }
  }
  return nullptr;
}

}  // namespace

TEST_CASE("compare flags an injected 30 % bandwidth regression") {
  TempDir dir;
  auto index = index_histories({write_runs(dir, 0.7, 1.0)});
  auto comparison = compare_runs(index, {});
  CHECK(comparison.run_id == "905");
  CHECK(comparison.baseline_runs.size() == 5);
  const auto* bw = row_for(comparison, "bw_avg_GBs");
  REQUIRE(bw);
  CHECK(bw->baseline.size() == 25);
  CHECK(bw->current.size() == 5);
  CHECK(bw->change_percent == Approx(-30).margin(3));
  CHECK(bw->verdict == Verdict::kRegression);
  CHECK(row_for(comparison, "lat_typical_us")->verdict == Verdict::kWithinThreshold);
  CHECK(comparison.has_regression());
}

TEST_CASE("compare flags a 30 % latency increase: lower is better") {
  TempDir dir;
  auto comparison = compare_runs(index_histories({write_runs(dir, 1.0, 1.3)}), {});
  CHECK(row_for(comparison, "lat_typical_us")->verdict == Verdict::kRegression);
  CHECK(row_for(comparison, "bw_avg_GBs")->verdict == Verdict::kWithinThreshold);
}

TEST_CASE("compare ignores 5 % noise and calls 30 % faster an improvement") {
  TempDir dir;
  auto noisy = compare_runs(index_histories({write_runs(dir, 0.95, 1.05)}), {});
  CHECK_FALSE(noisy.has_regression());
  CHECK(row_for(noisy, "bw_avg_GBs")->verdict == Verdict::kWithinThreshold);
  TempDir other;
  auto faster = compare_runs(index_histories({write_runs(other, 1.3, 0.7)}), {});
  CHECK_FALSE(faster.has_regression());
  CHECK(row_for(faster, "bw_avg_GBs")->verdict == Verdict::kImprovement);
  CHECK(row_for(faster, "lat_typical_us")->verdict == Verdict::kImprovement);
}

TEST_CASE("too few samples is never a regression") {
  TempDir dir;
  auto file = dir / "history.jsonl";
  for (int r = 0; r < 3; ++r) {
    auto point = testing::make_point("bw", "perftest", {{"verb", "send"}}, "bw_avg_GBs", "GB/s",
                                     "higher", {r == 2 ? 1.0 : 2.0});
    ernic::append_history_record(
        file,
        testing::make_record(std::to_string(r + 1), fmt::format("2026-11-0{} 00:00:00 UTC", r + 1),
                             "local", nlohmann::json::array({point})));
  }
  auto comparison = compare_runs(index_histories({file}), {});
  REQUIRE(comparison.rows.size() == 1);
  CHECK(comparison.rows[0].verdict == Verdict::kTooFewSamples);
  CHECK(comparison.rows[0].test == "1 vs 2 samples");  // no distributions to test instead
}

TEST_CASE("named run and baseline; bad input is an error") {
  TempDir dir;
  auto index = index_histories({write_runs(dir, 0.7, 1.0)});
  CompareOptions options;
  options.run_id = "903";
  options.baseline_ids = {"900", "901"};
  auto comparison = compare_runs(index, options);
  CHECK(comparison.run_id == "903");
  CHECK(comparison.baseline_runs == std::vector<std::string>{"900", "901"});
  CHECK_FALSE(comparison.has_regression());
  options.run_id = "nope";
  CHECK_THROWS_AS(compare_runs(index, options), CompareInputError);
  options.run_id = "903";
  options.baseline_ids = {"903"};
  CHECK_THROWS_AS(compare_runs(index, options), CompareInputError);
}

TEST_CASE("rocm-ernic records compare their series, one value per run") {
  auto index = index_histories(
      {std::filesystem::path(ERNIC_SAMPLES_DIR) / "rocm-ernic-history-sample.jsonl"});
  auto comparison = compare_runs(index, {});
  CHECK(comparison.baseline_runs.size() == 2);
  REQUIRE_FALSE(comparison.rows.empty());
  for (const auto& row : comparison.rows) {
    CHECK(row.current.size() == 1);
    CHECK(row.verdict != Verdict::kRegression);
  }
  auto text = render_comparison(comparison, {});
  CHECK(text.find("series.latency[64 KiB]") != std::string::npos);
}

namespace {

// Six quickstart records of one runner class with one repetition per point, as `ernicctl run`
// writes them with perftest -H: send_lat 4 KiB with 1000 per-iteration latencies (log-normal,
// about 10 % spread, a run-to-run shift of about 2 %) and the point's figure, their median.
// The newest run's latencies are scaled by `last_factor`.
std::filesystem::path write_single_repetition_runs(const TempDir& dir, double last_factor) {
  auto file = dir / "history.jsonl";
  std::mt19937 rng(12);
  std::normal_distribution<double> run_shift(1.0, 0.02);
  for (int r = 0; r < 6; ++r) {
    double scale = run_shift(rng) * (r == 5 ? last_factor : 1.0);
    std::lognormal_distribution<double> iteration(std::log(12.0 * scale), 0.1);
    std::vector<double> latencies;
    for (int i = 0; i < 1000; ++i) {
      latencies.push_back(iteration(rng));
    }
    auto distribution = ernic::Distribution::of(latencies);
    auto point = testing::make_point("lat[verb=send,size=4096]", "perftest",
                                     {{"verb", "send"}, {"mode", "lat"}, {"size", "4096"}},
                                     "lat_typical_us", "us", "lower", {ernic::median(latencies)});
    point["samples"][0]["distributions"] = {{ernic::kLatencyDistribution, distribution}};
    ernic::append_history_record(
        file, testing::make_record(std::to_string(700 + r),
                                   fmt::format("2026-11-{:02} 03:00:00 UTC", r + 1), "self-hosted",
                                   nlohmann::json::array({point})));
  }
  return file;
}

}  // namespace

TEST_CASE("one repetition against five: the gate tests the pooled per-iteration latencies") {
  TempDir dir;
  auto file = write_single_repetition_runs(dir, 1.3);
  auto comparison = compare_runs(index_histories({file}), {});
  const auto* lat = row_for(comparison, "lat_typical_us");
  REQUIRE(lat);
  CHECK(lat->current.size() == 1);
  CHECK(lat->baseline.size() == 5);
  CHECK(lat->change_percent == Approx(30).margin(5));
  INFO(lat->test);
  CHECK_THAT(lat->test, Catch::StartsWith("per-iteration, Mann-Whitney, n=1000 vs 5000"));
  CHECK(lat->verdict == Verdict::kRegression);
  CHECK(comparison.has_regression());
  auto text = render_comparison(comparison, {});
  CHECK(text.find("per-iteration, Mann-Whitney") != std::string::npos);

  // The command exits 1 on it.
  auto gate = testing::run_ernicctl("compare " + file.string() + " --gate");
  CHECK(gate.exit_code == 1);
  CHECK(gate.out.find("REGRESSION") != std::string::npos);
}

TEST_CASE("one repetition against five: 5 % is noise however many iterations agree") {
  TempDir dir;
  auto file = write_single_repetition_runs(dir, 1.05);
  auto comparison = compare_runs(index_histories({file}), {});
  const auto* lat = row_for(comparison, "lat_typical_us");
  REQUIRE(lat);
  INFO(lat->test);
  CHECK_THAT(lat->test, Catch::StartsWith("per-iteration, Mann-Whitney"));
  CHECK(lat->verdict == Verdict::kWithinThreshold);
  CHECK_FALSE(comparison.has_regression());
  CHECK(testing::run_ernicctl("compare " + file.string() + " --gate").exit_code == 0);

  // The pooled test alone calls this few-percent shift significant (6000 values): with a 1 %
  // threshold it is flagged. The effect-size floor is what keeps noise out, not the p-value.
  CompareOptions strict;
  strict.threshold_percent = 1;
  auto strict_comparison = compare_runs(index_histories({file}), strict);
  CHECK(row_for(strict_comparison, "lat_typical_us")->verdict == Verdict::kRegression);
}

TEST_CASE("compare treats a concurrent group's Jain's index as a metric, higher is better") {
  TempDir dir;
  auto file = dir / "history.jsonl";
  std::mt19937 rng(11);
  std::normal_distribution<double> noise(0.0, 0.002);
  for (int r = 0; r < 6; ++r) {
    double j = r == 5 ? 0.6 : 0.99;  // the newest run: one member starved
    std::vector<double> per_repetition;
    for (int rep = 1; rep <= 5; ++rep) {
      per_repetition.push_back(j + noise(rng));
    }
    nlohmann::json points = nlohmann::json::array(
        {testing::make_point("bulk[size=65536]", "perftest", {{"size", "65536"}}, "bw_avg_GBs",
                             "GB/s", "higher", {2.4, 2.4, 2.4, 2.4, 2.4}),
         testing::make_point("lat[size=4096]", "perftest", {{"size", "4096"}}, "lat_typical_us",
                             "us", "lower", {3, 3, 3, 3, 3})});
    auto record = testing::make_record(std::to_string(700 + r),
                                       fmt::format("2026-11-{:02} 03:00:00 UTC", r + 1),
                                       "self-hosted", points);
    record["ernicctl"]["groups"] = nlohmann::json::array({testing::make_group(
        "beside", {"bulk[size=65536]", "lat[size=4096]"},
        {"bulk[size=65536] t1", "bulk[size=65536] t2", "bulk[size=65536] t3"}, per_repetition)});
    ernic::append_history_record(file, record);
  }
  auto comparison = compare_runs(index_histories({file}), {});
  const MetricComparison* group = nullptr;
  for (const auto& row : comparison.rows) {
    if (row.point == "group beside: bulk[size=65536] + lat[size=4096]") {
      group = &row;
    }
  }
  REQUIRE(group != nullptr);
  CHECK(group->metric == "jain_index");
  CHECK(group->direction == 1);
  CHECK(group->current.size() == 5);
  CHECK(group->baseline.size() == 25);
  CHECK(group->change_percent == Approx(-39.4).margin(1));
  CHECK(group->verdict == Verdict::kRegression);
  CHECK(comparison.has_regression());
}
