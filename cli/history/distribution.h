#pragma once

// The distribution behind one repetition's figure: every iteration's latency of a latency test,
// every interval's rate of a bandwidth test. A record keeps it compactly (docs/history-format.md):
// the values themselves when there are few, otherwise a fixed set of quantiles plus the extremes
// and the count, from which `compare` re-draws a sample of the same shape for its rank test.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace ernic {

// What a distribution measures, as records name it: every iteration's latency (microseconds) or
// every interval's bandwidth (GB/s).
inline constexpr const char* kLatencyDistribution = "lat_us";
inline constexpr const char* kBandwidthDistribution = "bw_GBs";

struct Distribution {
  // Up to this many values are kept as they are; more become kSketchQuantiles quantiles.
  static constexpr std::size_t kRawLimit = 64;
  static constexpr std::size_t kSketchQuantiles = 64;
  // A re-drawn sample holds at most this many values per repetition: enough for the rank test
  // to see a shape, few enough that pooling five runs stays fast.
  static constexpr std::size_t kDrawLimit = 1000;

  // An interval series (a rate per window of time) is kept whole up to this many windows, in
  // time order: it is also the point's progress over time.
  static constexpr std::size_t kSeriesLimit = 600;

  std::size_t count = 0;  // values measured
  double min = 0;
  double max = 0;
  // Every value, in the order measured (count <= the raw limit); empty for a sketch.
  std::vector<double> values;
  // For a sketch: the quantiles at probabilities i / (kSketchQuantiles + 1), i = 1..64, so that
  // with min (probability 0) and max (probability 1) they make a piecewise-linear quantile
  // function.
  std::vector<double> quantiles;
  // The probabilities of `quantiles` when they are not those evenly spaced ones (a sketch of
  // perftest's printed percentiles: 0.5, 0.99, 0.999); empty otherwise.
  std::vector<double> probabilities;

  bool empty() const { return count == 0; }
  bool raw() const { return !values.empty(); }

  // Seconds per value when the values are an interval series (perftest's per-second rows,
  // iperf3's intervals); absent for per-iteration values.
  std::optional<double> interval_s;

  // The distribution of `values` (in the order measured): raw up to `raw_limit` values, else a
  // sketch. Non-finite values are dropped.
  static Distribution of(std::vector<double> values, std::size_t raw_limit = kRawLimit);
  // An interval series of `interval_s` seconds per value, kept whole up to kSeriesLimit.
  static Distribution series(std::vector<double> values, double interval_s);

  // The quantile at probability p in 0..1 (linear between order statistics; for a sketch, linear
  // between its quantiles).
  double quantile(double p) const;
  double median() const { return quantile(0.5); }

  // A sample with this distribution's shape: the values themselves when raw, else
  // min(count, kDrawLimit) values at evenly spaced probabilities of the quantile function.
  std::vector<double> draw() const;

  // The same distribution with every value multiplied by `factor` (a unit conversion).
  Distribution scaled(double factor) const;
};

// perftest's own printed percentiles when it printed no histogram: a coarse sketch of `count`
// iterations from (probability, value) pairs, e.g. {0, t_min}, {0.5, t_typical}, {0.99, t_99},
// {0.999, t_99.9}, {1, t_max}, kept as those knots. nullopt without at least min and max.
std::optional<Distribution> distribution_from_percentiles(
    std::size_t count, const std::vector<std::pair<double, double>>& percentiles);

// The pooled re-drawn samples of several distributions (several repetitions or runs).
std::vector<double> pooled_draws(const std::vector<const Distribution*>& distributions);

// The distribution a point metric summarises, when it is a location of one ("lat_typical_us" and
// "lat_avg_us" of lat_us, "bw_avg_GBs" and iperf3's "bandwidth_GBs" of bw_GBs); "" otherwise (a
// p99, a peak, a retransmit count is not compared through the distribution).
std::string distribution_of_metric(const std::string& metric);

// Rounds to `digits` significant digits: what a record stores, so that lines stay short.
double round_significant(double value, int digits = 5);

}  // namespace ernic
