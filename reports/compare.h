#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "run_index.h"

namespace ernic::reports {

struct CompareOptions {
  std::string run_id;                     // empty: the newest run
  std::vector<std::string> baseline_ids;  // empty: a window of earlier runs
  std::size_t window = 5;                 // earlier runs of the same runner class and scenario
  double threshold_percent = 15;
  double alpha = 0.05;  // significance level of the Mann-Whitney U test
};

enum class Verdict {
  kRegression,     // worse by more than the threshold, and significant
  kImprovement,    // better by more than the threshold, and significant
  kWithinThreshold,
  kNotSignificant,  // beyond the threshold, but the test says it may be noise
  kTooFewSamples,   // beyond the threshold, fewer than 3 samples on a side
  kNoDirection,     // the metric says neither higher nor lower is better
};
const char* verdict_text(Verdict verdict);

struct MetricComparison {
  std::string point;  // point id, or "series.bandwidth" for rocm-ernic records
  std::string metric;
  std::string unit;
  int direction = 0;  // +1 higher is better, -1 lower is better
  std::vector<double> baseline;
  std::vector<double> current;
  double baseline_median = 0;
  double current_median = 0;
  double change_percent = 0;  // (current - baseline) / baseline
  std::string test;           // "U p=0.003", "3+ samples each side", ...
  Verdict verdict = Verdict::kWithinThreshold;
};

struct Comparison {
  std::string run_id;
  std::string runner;
  std::string scenario;
  std::vector<std::string> baseline_runs;
  std::vector<MetricComparison> rows;
  bool has_regression() const;
};

// The run, the baseline or the options do not make sense (exit status 2).
class CompareInputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Compares the chosen run with its baseline, metric by metric. ernicctl records compare the raw
// samples of every passed point with the pooled samples of the same point id in the baseline;
// rocm-ernic records (one median per run) compare their series values.
Comparison compare_runs(const RunIndex& index, const CompareOptions& options);

// A plain-text table, one row per metric, then a one-line verdict.
std::string render_comparison(const Comparison& comparison, const CompareOptions& options);

}  // namespace ernic::reports
