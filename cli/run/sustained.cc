#include "run/sustained.h"

#include "history/distribution.h"
#include "history/statistics.h"

namespace ernic {

const std::vector<MetricInfo>& sustained_metrics() {
  static const std::vector<MetricInfo> metrics = {
      {kDriftMetric, "", Better::kHigher},
      {kWorstIntervalMetric, "GB/s", Better::kHigher},
  };
  return metrics;
}

bool is_sustained(const PointParams& params) {
  return params.has("sustained") && params.flag("sustained");
}

void add_sustained_figures(Sample& sample) {
  auto found = sample.distributions.find(kBandwidthDistribution);
  if (found == sample.distributions.end() || !found->second.interval_s || !found->second.raw()) {
    return;  // no series in time order: nothing to say about drift
  }
  const std::vector<double>& series = found->second.values;
  if (auto ratio = drift(series)) {
    sample.metrics[kDriftMetric] = *ratio;
  }
  if (auto worst = worst_interval(series, /*higher_is_better=*/true)) {
    sample.metrics[kWorstIntervalMetric] = worst->value;
  }
}

}  // namespace ernic
