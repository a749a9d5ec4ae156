#include "history/distribution.h"

#include <catch2/catch.hpp>
#include <random>

#include "history/history_record.h"
#include "history/statistics.h"

namespace ernic {
namespace {

std::vector<double> lognormal_sample(std::size_t n, double median, unsigned seed) {
  std::mt19937 rng(seed);
  std::lognormal_distribution<double> shape(std::log(median), 0.1);
  std::vector<double> out;
  for (std::size_t i = 0; i < n; ++i) {
    out.push_back(shape(rng));
  }
  return out;
}

TEST_CASE("a short list of values is kept as it is, in measured order", "[distribution]") {
  auto d = Distribution::of({3, 1, 2, std::nan(""), 4});
  CHECK(d.raw());
  CHECK(d.count == 4);
  CHECK(d.values == std::vector<double>{3, 1, 2, 4});
  CHECK(d.min == 1);
  CHECK(d.max == 4);
  CHECK(d.median() == 2.5);
  CHECK(d.quantile(0) == 1);
  CHECK(d.quantile(1) == 4);
  CHECK(d.draw() == d.values);
  CHECK(Distribution::of({}).empty());
}

TEST_CASE("a long list becomes 64 quantiles that keep its shape", "[distribution]") {
  auto values = lognormal_sample(5000, 20.0, 7);
  auto d = Distribution::of(values);
  REQUIRE_FALSE(d.raw());
  CHECK(d.count == 5000);
  CHECK(d.quantiles.size() == Distribution::kSketchQuantiles);
  CHECK(std::is_sorted(d.quantiles.begin(), d.quantiles.end()));
  CHECK(d.min == *std::min_element(values.begin(), values.end()));
  CHECK(d.max == *std::max_element(values.begin(), values.end()));
  // Median and tail of the sketch against the data's own (the sketch interpolates between
  // quantiles 1/65 apart: within a percent of a spread-out sample).
  CHECK(d.median() == Approx(median(values)).epsilon(0.01));
  CHECK(d.quantile(0.9) == Approx(percentile(values, 90)).epsilon(0.01));
  // A re-drawn sample is capped and has the same centre.
  auto drawn = d.draw();
  CHECK(drawn.size() == Distribution::kDrawLimit);
  CHECK(median(drawn) == Approx(median(values)).epsilon(0.01));
}

TEST_CASE("an interval series stays whole and in time order", "[distribution]") {
  std::vector<double> rates(100);
  for (std::size_t i = 0; i < rates.size(); ++i) {
    rates[i] = 1.0 + 0.01 * static_cast<double>(i);
  }
  auto d = Distribution::series(rates, 1.0);
  CHECK(d.raw());
  CHECK(d.values == rates);
  CHECK(d.interval_s == 1.0);
}

TEST_CASE("perftest's printed percentiles make a coarse sketch", "[distribution]") {
  auto d =
      distribution_from_percentiles(1000, {{0, 10}, {0.5, 12}, {0.99, 20}, {0.999, 30}, {1, 50}});
  REQUIRE(d);
  CHECK(d->count == 1000);
  CHECK(d->median() == Approx(12));
  CHECK(d->quantile(0.25) == Approx(11).epsilon(0.02));
  CHECK(d->quantile(1) == 50);
  CHECK(d->probabilities == std::vector<double>{0.5, 0.99, 0.999});
  CHECK(d->quantile(0.995) == Approx(20 + 10 * 5.0 / 9));
  CHECK_FALSE(distribution_from_percentiles(1000, {{0.5, 12}, {1, 50}}));  // no minimum
  CHECK_FALSE(distribution_from_percentiles(0, {{0, 1}, {1, 2}}));
}

TEST_CASE("distributions survive the record round trip, rounded to 5 digits",
          "[distribution][history]") {
  SampleRecord sample;
  sample.distributions[kLatencyDistribution] = Distribution::of(lognormal_sample(1000, 3.3, 1));
  sample.distributions[kBandwidthDistribution] = Distribution::series({1.23456789, 1.3, 1.25}, 1.0);
  PointRecord point{.id = "lat", .status = "passed"};
  point.samples.push_back(sample);
  nlohmann::json json = point;
  const auto& written = json["samples"][0]["distributions"];
  CHECK(written[kBandwidthDistribution]["values"][0] == 1.2346);
  CHECK(written[kLatencyDistribution]["q"].size() == Distribution::kSketchQuantiles);

  std::vector<std::string> problems;
  auto back = read_distribution(written[kLatencyDistribution], "d", &problems);
  REQUIRE(back);
  CHECK(problems.empty());
  const Distribution& original = sample.distributions[kLatencyDistribution];
  CHECK(back->count == 1000);
  CHECK(back->median() == Approx(original.median()).epsilon(1e-4));
  auto series = read_distribution(written[kBandwidthDistribution], "d", &problems);
  REQUIRE(series);
  CHECK(series->values.size() == 3);
  CHECK(series->interval_s == 1.0);

  Distribution percentiles =
      *distribution_from_percentiles(50, {{0, 1}, {0.5, 2}, {0.99, 3}, {1, 4}});
  nlohmann::json sketch = percentiles;
  CHECK(sketch["p"] == nlohmann::json({0.5, 0.99}));
  auto sketch_back = read_distribution(sketch, "s", &problems);
  REQUIRE(sketch_back);
  CHECK(sketch_back->quantile(0.75) == Approx(percentiles.quantile(0.75)));
  CHECK(problems.empty());

  CHECK_FALSE(read_distribution({{"n", 3}, {"values", {1, 2}}}, "x.lat_us", &problems));
  CHECK_FALSE(
      read_distribution({{"n", 100}, {"q", {1, 2}}, {"min", 0}, {"max", 3}}, "y", &problems));
  REQUIRE(problems.size() == 2);
  CHECK(problems[0] == "x.lat_us must list n numbers as values");
}

TEST_CASE("round_significant keeps five significant digits", "[distribution]") {
  CHECK(round_significant(12.3456789) == 12.346);
  CHECK(round_significant(123456.7) == 123460);
  CHECK(round_significant(0.000123456) == 0.00012346);
  CHECK(round_significant(0) == 0);
}

TEST_CASE("only location metrics are compared through a distribution", "[distribution]") {
  CHECK(distribution_of_metric("lat_typical_us") == kLatencyDistribution);
  CHECK(distribution_of_metric("bw_avg_GBs") == kBandwidthDistribution);
  CHECK(distribution_of_metric("bandwidth_GBs") == kBandwidthDistribution);
  CHECK(distribution_of_metric("lat_p99_us").empty());
  CHECK(distribution_of_metric("bw_peak_GBs").empty());
}

}  // namespace
}  // namespace ernic
