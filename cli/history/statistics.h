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

// Each value's share of their sum, x_i / sum x; empty when the sum is not positive.
std::vector<double> shares(const std::vector<double>& values);

// Jain's fairness index (sum x)^2 / (n * sum x^2) of the tenants' throughputs: 1 when every
// tenant got the same, 1/n when one took everything. nullopt for no values or all zero.
std::optional<double> jain_index(const std::vector<double>& values);

// The sustained rung's drift: the median of the last tenth of a series of interval samples over
// the median of its first tenth (1: no drift; 0.9: the end runs 10 % below the start), a tenth
// being at least one sample. nullopt with fewer than 4 samples or a first tenth whose median is 0.
std::optional<double> drift(const std::vector<double>& series);

struct WorstInterval {
  std::size_t index = 0;  // into the series (the first one when several are equally bad)
  double value = 0;
};
// The lowest sample of a throughput series (`higher_is_better`), the highest of a latency one;
// nullopt for an empty series.
std::optional<WorstInterval> worst_interval(const std::vector<double>& series,
                                            bool higher_is_better);

}  // namespace ernic
