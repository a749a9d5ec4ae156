#pragma once

#include <cstddef>
#include <optional>
#include <vector>

namespace ernic {

// Median, mean, extremes and p99 of one metric's samples: what a record's `summary` holds.
struct Statistics {
  std::size_t n = 0;
  double median = 0;
  double mean = 0;
  double min = 0;
  double max = 0;
  double p99 = 0;  // nearest rank
};

// nullopt for no values.
std::optional<Statistics> summarize(const std::vector<double>& values);

// 0 for no values. The median of an even count is the mean of the two middle values.
double median(std::vector<double> values);
double mean(const std::vector<double>& values);
// Nearest-rank percentile (`percent` in 0..100): the smallest value with at least that share of
// the values at or below it.
double percentile(std::vector<double> values, double percent);

struct MannWhitney {
  double u = 0;        // pairs (a, b) with a > b, ties counted one half
  double p_value = 1;  // two-sided
  bool exact = false;  // exact distribution (small samples without ties) or normal approximation
};

// Two-sided Mann-Whitney U test of `a` against `b`. nullopt when either side is empty.
std::optional<MannWhitney> mann_whitney_u(const std::vector<double>& a,
                                          const std::vector<double>& b);

// The smallest two-sided p-value the exact test can reach with these sample sizes,
// 2 / C(n1 + n2, n1): with 3 against 3 it is 0.1, so such a test can never be significant at 5 %.
double smallest_p_value(std::size_t n1, std::size_t n2);

}  // namespace ernic
