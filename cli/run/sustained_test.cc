#include "run/sustained.h"

#include <catch2/catch.hpp>

#include "history/distribution.h"

namespace ernic {
namespace {

Sample with_series(std::vector<double> rates) {
  Sample sample;
  sample.metrics["bw_avg_GBs"] = 1.0;
  sample.distributions[kBandwidthDistribution] = Distribution::series(std::move(rates), 1.0);
  return sample;
}

TEST_CASE("a sustained sample gets its drift and worst second from its series", "[sustained]") {
  Sample sample = with_series({2.0, 2.2, 2.1, 1.5, 2.0, 1.8});
  add_sustained_figures(sample);
  REQUIRE(sample.metrics.contains(kDriftMetric));
  CHECK(sample.metrics[kDriftMetric] == Approx(1.8 / 2.0));
  CHECK(sample.metrics[kWorstIntervalMetric] == Approx(1.5));
  CHECK(sample.metrics["bw_avg_GBs"] == 1.0);  // the tool's figures stay
}

TEST_CASE("without a series in time order there is no drift", "[sustained]") {
  Sample short_series = with_series({2.0, 1.0});
  add_sustained_figures(short_series);
  CHECK_FALSE(short_series.metrics.contains(kDriftMetric));
  CHECK(short_series.metrics[kWorstIntervalMetric] == Approx(1.0));

  Sample latencies;  // per-iteration values are not a series
  latencies.distributions[kLatencyDistribution] = Distribution::of({5, 6, 7, 8, 9});
  add_sustained_figures(latencies);
  CHECK(latencies.metrics.empty());
}

}  // namespace
}  // namespace ernic
