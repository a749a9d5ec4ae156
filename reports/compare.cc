#include "compare.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <tuple>

#include "history/distribution.h"
#include "history/statistics.h"
#include "markup.h"
#include "record_points.h"

namespace ernic::reports {
namespace {

constexpr std::size_t kMinimumSamples = 3;

struct Key {
  std::string point;
  std::string metric;
  bool operator<(const Key& other) const {
    return std::tie(point, metric) < std::tie(other.point, other.metric);
  }
};

struct Samples {
  std::string unit;
  int direction = 0;
  std::vector<double> values;
  // The per-iteration or per-interval distributions behind the values (records that kept them).
  std::vector<Distribution> distributions;
  std::string distribution_kind;
};

bool usable_baseline(const RunEntry& run) {
  return !run.ernicctl || run.run_status() == "passed";
}

// Every sample a run contributes, by point and metric.
void collect(const RunIndex& index, const RunEntry& run, bool use_points,
             std::map<Key, Samples>& out) {
  if (use_points && run.ernicctl) {
    auto record = load_record(index, run);
    for (const auto& point : record.points()) {
      if (!point.passed()) {
        continue;
      }
      for (const auto& metric : point.measured_metrics()) {
        auto values = point.values(metric);
        if (values.empty()) {
          continue;
        }
        auto& samples = out[{point.id, metric}];
        samples.unit = metric_unit(point, metric);
        samples.direction = metric_direction(point, metric);
        samples.values.insert(samples.values.end(), values.begin(), values.end());
        if (std::string kind = distribution_of_metric(metric); !kind.empty()) {
          samples.distribution_kind = kind;
          for (const Distribution* distribution : point.distributions(kind)) {
            samples.distributions.push_back(*distribution);
          }
        }
      }
    }
    // A concurrent group's Jain's index, one value per repetition, higher is better.
    const auto& groups = record.ernicctl ? record.ernicctl->groups : std::vector<GroupRecord>{};
    for (const auto& group : groups) {
      for (const auto& fairness : group.fairness) {
        auto& samples = out[{group_figure_name(group, fairness), kJainIndexMetric}];
        samples.direction = 1;
        for (const auto& repetition : fairness.repetitions) {
          samples.values.push_back(repetition.jain);
        }
      }
    }
    return;
  }
  struct SeriesMetric {
    Series series;
    const char* metric;
    const char* unit;
    int direction;
  };
  const SeriesMetric kSeriesMetrics[] = {
      {Series::kBandwidth, "bw_peak_GBs", "GB/s", 1},
      {Series::kLatency, "lat_typical_us", "\u00b5s", -1},
      {Series::kNvmeof, "bw_avg_GBs", "GB/s", 1},
      {Series::kTcp, badge_key(Badge::kTcp), "GB/s", 1},
  };
  for (const auto& spec : kSeriesMetrics) {
    for (const auto& [size, value] : run.values(spec.series)) {
      std::string point = fmt::format("series.{}", series_key(spec.series));
      if (spec.series != Series::kTcp) {
        point += fmt::format("[{}]", size_label(size));
      }
      auto& samples = out[{point, spec.metric}];
      samples.unit = spec.unit;
      samples.direction = spec.direction;
      samples.values.push_back(value);
    }
  }
}

struct DistributionTest {
  std::string text;
  bool significant = false;
};

// Too few repetitions for a rank test on them: test the pooled per-iteration (or per-interval)
// values of the run against those of the baseline runs instead. Values of one run are not
// independent (a run-to-run shift of a few percent is "significant" with thousands of them), so
// the test only guards against noise and the change of the pooled medians, which must exceed the
// threshold in the direction of the figures' change, decides.
DistributionTest distribution_test(const Samples& current, const Samples& baseline,
                                   double change_percent, const CompareOptions& options) {
  auto pointers = [](const std::vector<Distribution>& list) {
    std::vector<const Distribution*> out;
    for (const auto& d : list) {
      out.push_back(&d);
    }
    return out;
  };
  std::vector<double> a = pooled_draws(pointers(current.distributions));
  std::vector<double> b = pooled_draws(pointers(baseline.distributions));
  auto test = mann_whitney_u(a, b);
  double median_b = median(b);
  double pooled_change = median_b == 0 ? 0 : 100 * (median(a) - median_b) / std::fabs(median_b);
  const char* per = current.distribution_kind == kBandwidthDistribution ? "interval" : "iteration";
  DistributionTest out;
  out.text = fmt::format("per-{}, Mann-Whitney, n={} vs {}, p={}, medians {:+.1f} %", per, a.size(),
                         b.size(), test ? format_figure(test->p_value, 2) : "-", pooled_change);
  out.significant = test && test->p_value < options.alpha &&
                    std::fabs(pooled_change) > options.threshold_percent &&
                    pooled_change * change_percent > 0;
  return out;
}

const RunEntry* find_run(const RunIndex& index, const std::string& run_id) {
  for (auto it = index.runs.rbegin(); it != index.runs.rend(); ++it) {
    if (it->run_id == run_id) {
      return &*it;
    }
  }
  return nullptr;
}

}  // namespace

const char* verdict_text(Verdict verdict) {
  switch (verdict) {
    case Verdict::kRegression:
      return "REGRESSION";
    case Verdict::kImprovement:
      return "improvement";
    case Verdict::kWithinThreshold:
      return "ok";
    case Verdict::kNotSignificant:
      return "not significant";
    case Verdict::kTooFewSamples:
      return "too few samples";
    case Verdict::kNoDirection:
      return "no direction";
  }
  return "";
}

bool Comparison::has_regression() const {
  return std::any_of(rows.begin(), rows.end(),
                     [](const auto& row) { return row.verdict == Verdict::kRegression; });
}

Comparison compare_runs(const RunIndex& index, const CompareOptions& options) {
  if (options.threshold_percent < 0) {
    throw CompareInputError("--threshold must not be negative");
  }
  if (index.runs.empty()) {
    throw CompareInputError("the history holds no runs");
  }
  const RunEntry* current =
      options.run_id.empty() ? &index.runs.back() : find_run(index, options.run_id);
  if (current == nullptr) {
    throw CompareInputError(fmt::format("run {} is not in the history", options.run_id));
  }
  Comparison comparison;
  comparison.run_id = current->run_id;
  comparison.runner = current->runner_class();
  comparison.scenario = current->scenario_name();

  std::vector<const RunEntry*> baseline;
  if (!options.baseline_ids.empty()) {
    for (const auto& id : options.baseline_ids) {
      const RunEntry* run = find_run(index, id);
      if (run == nullptr) {
        throw CompareInputError(fmt::format("baseline run {} is not in the history", id));
      }
      if (run == current) {
        throw CompareInputError(fmt::format("run {} cannot be its own baseline", id));
      }
      baseline.push_back(run);
    }
  } else {
    for (const RunEntry* run = current;
         run != index.runs.data() && baseline.size() < options.window;) {
      --run;
      if (run->runner_class() == current->runner_class() &&
          run->scenario_name() == current->scenario_name() && usable_baseline(*run)) {
        baseline.push_back(run);
      }
    }
  }
  for (const auto* run : baseline) {
    comparison.baseline_runs.push_back(run->run_id);
  }

  bool use_points = current->ernicctl.has_value();
  std::map<Key, Samples> now;
  collect(index, *current, use_points, now);
  std::map<Key, Samples> before;
  for (const auto* run : baseline) {
    collect(index, *run, use_points, before);
  }
  for (const auto& [key, samples] : now) {
    auto it = before.find(key);
    if (it == before.end()) {
      continue;
    }
    MetricComparison row;
    row.point = key.point;
    row.metric = key.metric;
    row.unit = samples.unit;
    row.direction = samples.direction;
    row.current = samples.values;
    row.baseline = it->second.values;
    row.current_median = median(row.current);
    row.baseline_median = median(row.baseline);
    row.change_percent =
        row.baseline_median == 0
            ? 0
            : 100 * (row.current_median - row.baseline_median) / std::fabs(row.baseline_median);
    bool beyond = std::fabs(row.change_percent) > options.threshold_percent;
    bool significant = false;
    bool enough = true;
    if (smallest_p_value(row.current.size(), row.baseline.size()) < options.alpha) {
      auto test = mann_whitney_u(row.current, row.baseline);
      row.test = fmt::format("U test p={}", format_figure(test->p_value, 2));
      significant = test->p_value < options.alpha;
    } else if (!samples.distributions.empty() && !it->second.distributions.empty()) {
      auto test = distribution_test(samples, it->second, row.change_percent, options);
      row.test = test.text;
      significant = test.significant;
    } else if (row.current.size() >= kMinimumSamples && row.baseline.size() >= kMinimumSamples) {
      row.test = "3+ samples each side";
      significant = true;
    } else {
      row.test = fmt::format("{} vs {} samples", row.current.size(), row.baseline.size());
      enough = false;
    }
    if (row.direction == 0) {
      row.verdict = Verdict::kNoDirection;
    } else if (!beyond) {
      row.verdict = Verdict::kWithinThreshold;
    } else if (!enough) {
      row.verdict = Verdict::kTooFewSamples;
    } else if (!significant) {
      row.verdict = Verdict::kNotSignificant;
    } else {
      bool worse = row.direction * row.change_percent < 0;
      row.verdict = worse ? Verdict::kRegression : Verdict::kImprovement;
    }
    comparison.rows.push_back(std::move(row));
  }
  return comparison;
}

std::string render_comparison(const Comparison& comparison, const CompareOptions& options) {
  std::string out;
  auto it = std::back_inserter(out);
  fmt::format_to(it, "run {} (runner {}, scenario {}) against {}\n", comparison.run_id,
                 comparison.runner, comparison.scenario.empty() ? "-" : comparison.scenario,
                 comparison.baseline_runs.empty()
                     ? std::string("no earlier run")
                     : fmt::format("{} run(s): {}", comparison.baseline_runs.size(),
                                   fmt::join(comparison.baseline_runs, ", ")));
  if (comparison.rows.empty()) {
    out += "nothing to compare: no metric appears in both the run and its baseline\n";
    return out;
  }
  std::vector<std::array<std::string, 8>> table;
  table.push_back(
      {"point", "metric", "better", "baseline (n)", "run (n)", "change", "test", "verdict"});
  for (const auto& row : comparison.rows) {
    table.push_back(
        {row.point, row.metric, row.direction > 0 ? "higher" : (row.direction < 0 ? "lower" : "?"),
         fmt::format("{} ({})", format_figure(row.baseline_median), row.baseline.size()),
         fmt::format("{} ({})", format_figure(row.current_median), row.current.size()),
         fmt::format("{:+.1f} %", row.change_percent), row.test, verdict_text(row.verdict)});
  }
  std::array<std::size_t, 8> widths{};
  for (const auto& line : table) {
    for (std::size_t c = 0; c < line.size(); ++c) {
      widths[c] = std::max(widths[c], line[c].size());
    }
  }
  for (const auto& line : table) {
    std::string text;
    for (std::size_t c = 0; c < line.size(); ++c) {
      text += fmt::format("{:<{}}", line[c], c + 1 < line.size() ? widths[c] + 2 : 0);
    }
    while (!text.empty() && text.back() == ' ') {
      text.pop_back();
    }
    out += text + "\n";
  }
  std::size_t regressions =
      std::count_if(comparison.rows.begin(), comparison.rows.end(),
                    [](const auto& r) { return r.verdict == Verdict::kRegression; });
  fmt::format_to(it,
                 "{} regression(s) beyond {} % (significance: Mann-Whitney U at {} on the "
                 "repetitions, else on the pooled per-iteration or per-interval values with their "
                 "medians beyond the threshold too, else at least 3 samples each side)\n",
                 regressions, format_figure(options.threshold_percent),
                 format_figure(options.alpha));
  return out;
}

}  // namespace ernic::reports
