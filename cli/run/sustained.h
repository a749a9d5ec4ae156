#pragma once

#include <vector>

#include "benchmarks/benchmark.h"
#include "run/run_result.h"

namespace ernic {

// The sustained rung's figures (a point with `sustained: true`), from the per-interval rates a
// sample holds (the load generator's per-second rows, iperf3's intervals): the drift (median of
// the last tenth over the first tenth: 1 is steady, 0.9 ends 10 % below the start) and the worst
// interval's rate.
inline constexpr const char* kDriftMetric = "bw_drift";
inline constexpr const char* kWorstIntervalMetric = "bw_worst_interval_GBs";
const std::vector<MetricInfo>& sustained_metrics();

// Whether the point's parameters ask for the sustained rung.
bool is_sustained(const PointParams& params);

// Adds the figures to `sample.metrics` when its bandwidth series is long enough for a drift
// (ten intervals); the worst interval whenever it has a series.
void add_sustained_figures(Sample& sample);

}  // namespace ernic
