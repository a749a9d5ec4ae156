// The one statistics module: what a record's summary, the reports, the run outputs and
// `compare` compute from samples.
#include "history/statistics.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

namespace ernic {

double median(std::vector<double> values) {
  if (values.empty()) {
    return 0;
  }
  std::sort(values.begin(), values.end());
  std::size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

double mean(const std::vector<double>& values) {
  if (values.empty()) {
    return 0;
  }
  double sum = 0;
  for (double v : values) {
    sum += v;
  }
  return sum / static_cast<double>(values.size());
}

double percentile(std::vector<double> values, double percent) {
  if (values.empty()) {
    return 0;
  }
  std::sort(values.begin(), values.end());
  auto rank =
      static_cast<std::size_t>(std::ceil(percent / 100.0 * static_cast<double>(values.size())));
  return values[std::clamp<std::size_t>(rank, 1, values.size()) - 1];
}

std::optional<Statistics> summarize(const std::vector<double>& values) {
  if (values.empty()) {
    return std::nullopt;
  }
  auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  return Statistics{.n = values.size(),
                    .median = median(values),
                    .mean = mean(values),
                    .min = *lo,
                    .max = *hi,
                    .p99 = percentile(values, 99)};
}

namespace {

constexpr std::size_t kMaxExactCells = 2500;  // n1 * n2: beyond it the normal approximation is fine

// counts[u] = number of orderings of n1 + n2 distinct values whose U equals u. Built by adding the
// largest value last: it comes from `a` (beating all j values of b, U grows by j) or from `b`.
std::vector<double> exact_u_counts(std::size_t n1, std::size_t n2) {
  // previous[j] holds the distribution for (i - 1, j); current[j] for (i, j).
  std::vector<std::vector<double>> previous(n2 + 1, std::vector<double>{1.0});
  for (std::size_t i = 1; i <= n1; ++i) {
    std::vector<std::vector<double>> current(n2 + 1);
    current[0] = {1.0};
    for (std::size_t j = 1; j <= n2; ++j) {
      std::vector<double> counts(i * j + 1, 0.0);
      for (std::size_t u = 0; u < previous[j].size(); ++u) {
        counts[u + j] += previous[j][u];
      }
      for (std::size_t u = 0; u < current[j - 1].size(); ++u) {
        counts[u] += current[j - 1][u];
      }
      current[j] = std::move(counts);
    }
    previous = std::move(current);
  }
  return previous[n2];
}

}  // namespace

double smallest_p_value(std::size_t n1, std::size_t n2) {
  if (n1 == 0 || n2 == 0) {
    return 1;
  }
  // C(n1 + n2, n1) in floating point: exact enough for a threshold comparison.
  double combinations = 1;
  std::size_t k = std::min(n1, n2);
  for (std::size_t i = 1; i <= k; ++i) {
    combinations = combinations * static_cast<double>(n1 + n2 - k + i) / static_cast<double>(i);
  }
  return std::min(1.0, 2.0 / combinations);
}

std::optional<MannWhitney> mann_whitney_u(const std::vector<double>& a,
                                          const std::vector<double>& b) {
  if (a.empty() || b.empty()) {
    return std::nullopt;
  }
  std::size_t n1 = a.size();
  std::size_t n2 = b.size();
  // Ranks with ties averaged.
  std::vector<std::pair<double, int>> all;
  all.reserve(n1 + n2);
  for (double v : a) {
    all.emplace_back(v, 0);
  }
  for (double v : b) {
    all.emplace_back(v, 1);
  }
  std::sort(all.begin(), all.end());
  double rank_sum_a = 0;
  double tie_term = 0;
  bool ties = false;
  for (std::size_t i = 0; i < all.size();) {
    std::size_t j = i;
    while (j < all.size() && all[j].first == all[i].first) {
      ++j;
    }
    double average_rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2;
    double t = static_cast<double>(j - i);
    if (t > 1) {
      ties = true;
      tie_term += t * t * t - t;
    }
    for (std::size_t k = i; k < j; ++k) {
      if (all[k].second == 0) {
        rank_sum_a += average_rank;
      }
    }
    i = j;
  }
  double d1 = static_cast<double>(n1);
  double d2 = static_cast<double>(n2);
  MannWhitney result;
  result.u = rank_sum_a - d1 * (d1 + 1) / 2;
  if (!ties && n1 * n2 <= kMaxExactCells) {
    auto counts = exact_u_counts(n1, n2);
    double total = std::accumulate(counts.begin(), counts.end(), 0.0);
    auto u = static_cast<std::size_t>(std::lround(result.u));
    double lower = 0;
    double upper = 0;
    for (std::size_t k = 0; k < counts.size(); ++k) {
      if (k <= u) {
        lower += counts[k];
      }
      if (k >= u) {
        upper += counts[k];
      }
    }
    result.p_value = std::min(1.0, 2 * std::min(lower, upper) / total);
    result.exact = true;
    return result;
  }
  double n = d1 + d2;
  double mean = d1 * d2 / 2;
  double variance = d1 * d2 / 12 * ((n + 1) - tie_term / (n * (n - 1)));
  if (variance <= 0) {
    result.p_value = 1;  // every value equal
    return result;
  }
  double z = (std::fabs(result.u - mean) - 0.5) / std::sqrt(variance);
  result.p_value = std::min(1.0, std::erfc(std::max(0.0, z) / std::sqrt(2.0)));
  return result;
}

std::vector<double> shares(const std::vector<double>& values) {
  double sum = 0;
  for (double value : values) {
    sum += value;
  }
  std::vector<double> out;
  if (sum <= 0) {
    return out;
  }
  for (double value : values) {
    out.push_back(value / sum);
  }
  return out;
}

std::optional<double> jain_index(const std::vector<double>& values) {
  double sum = 0;
  double squares = 0;
  for (double value : values) {
    sum += value;
    squares += value * value;
  }
  if (values.empty() || squares <= 0) {
    return std::nullopt;
  }
  return sum * sum / (static_cast<double>(values.size()) * squares);
}

std::optional<double> drift(const std::vector<double>& series) {
  // A short sustained point (the quickstart's: a few seconds) still says whether it ended where
  // it started: a tenth is at least one interval. Below four intervals the first and the last
  // are mostly the warm-up and the cool-down.
  constexpr std::size_t kTenths = 10;
  constexpr std::size_t kFewestIntervals = 4;
  if (series.size() < kFewestIntervals) {
    return std::nullopt;
  }
  std::size_t tenth = std::max<std::size_t>(1, series.size() / kTenths);
  double first = median(std::vector<double>(series.begin(), series.begin() + tenth));
  double last = median(std::vector<double>(series.end() - tenth, series.end()));
  if (first == 0) {
    return std::nullopt;
  }
  return last / first;
}

std::optional<WorstInterval> worst_interval(const std::vector<double>& series,
                                            bool higher_is_better) {
  if (series.empty()) {
    return std::nullopt;
  }
  auto worst = higher_is_better ? std::min_element(series.begin(), series.end())
                                : std::max_element(series.begin(), series.end());
  return WorstInterval{static_cast<std::size_t>(worst - series.begin()), *worst};
}

}  // namespace ernic
