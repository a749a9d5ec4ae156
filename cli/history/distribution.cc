// Distributions of per-iteration and per-interval values, as records keep them and `compare`
// re-draws them.
#include "history/distribution.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace ernic {
namespace {

// Linear interpolation between order statistics (the "type 7" estimator): exact at 0 and 1.
double sorted_quantile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) {
    return 0;
  }
  double h = std::clamp(p, 0.0, 1.0) * static_cast<double>(sorted.size() - 1);
  auto below = static_cast<std::size_t>(std::floor(h));
  if (below + 1 >= sorted.size()) {
    return sorted.back();
  }
  return sorted[below] + (h - static_cast<double>(below)) * (sorted[below + 1] - sorted[below]);
}

// A piecewise-linear function through (probability, value) knots with ascending probabilities.
double interpolate(const std::vector<std::pair<double, double>>& knots, double p) {
  if (p <= knots.front().first) {
    return knots.front().second;
  }
  for (std::size_t i = 1; i < knots.size(); ++i) {
    if (p <= knots[i].first) {
      const auto& [p0, v0] = knots[i - 1];
      const auto& [p1, v1] = knots[i];
      return p1 == p0 ? v1 : v0 + (p - p0) / (p1 - p0) * (v1 - v0);
    }
  }
  return knots.back().second;
}

double sketch_probability(std::size_t i) {
  return static_cast<double>(i) / static_cast<double>(Distribution::kSketchQuantiles + 1);
}

}  // namespace

Distribution Distribution::of(std::vector<double> values, std::size_t raw_limit) {
  std::erase_if(values, [](double v) { return !std::isfinite(v); });
  Distribution out;
  if (values.empty()) {
    return out;
  }
  out.count = values.size();
  auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  out.min = *lo;
  out.max = *hi;
  if (values.size() <= raw_limit) {
    out.values = std::move(values);
    return out;
  }
  std::sort(values.begin(), values.end());
  out.quantiles.reserve(kSketchQuantiles);
  for (std::size_t i = 1; i <= kSketchQuantiles; ++i) {
    out.quantiles.push_back(sorted_quantile(values, sketch_probability(i)));
  }
  return out;
}

Distribution Distribution::series(std::vector<double> values, double interval_s) {
  Distribution out = of(std::move(values), kSeriesLimit);
  if (!out.empty()) {
    out.interval_s = interval_s;
  }
  return out;
}

double Distribution::quantile(double p) const {
  if (empty()) {
    return 0;
  }
  if (raw()) {
    std::vector<double> sorted = values;
    std::sort(sorted.begin(), sorted.end());
    return sorted_quantile(sorted, p);
  }
  std::vector<std::pair<double, double>> knots;
  knots.reserve(quantiles.size() + 2);
  knots.emplace_back(0.0, min);
  for (std::size_t i = 0; i < quantiles.size(); ++i) {
    double at = i < probabilities.size() ? probabilities[i] : sketch_probability(i + 1);
    knots.emplace_back(at, quantiles[i]);
  }
  knots.emplace_back(1.0, max);
  return interpolate(knots, p);
}

std::vector<double> Distribution::draw() const {
  if (raw() || empty()) {
    return values;
  }
  std::size_t n = std::min(count, kDrawLimit);
  std::vector<double> out;
  out.reserve(n);
  for (std::size_t k = 0; k < n; ++k) {
    out.push_back(quantile((static_cast<double>(k) + 0.5) / static_cast<double>(n)));
  }
  return out;
}

Distribution Distribution::scaled(double factor) const {
  Distribution out = *this;
  out.min *= factor;
  out.max *= factor;
  if (factor < 0) {
    std::swap(out.min, out.max);
  }
  for (double& v : out.values) {
    v *= factor;
  }
  for (double& v : out.quantiles) {
    v *= factor;
  }
  return out;
}

std::optional<Distribution> distribution_from_percentiles(
    std::size_t count, const std::vector<std::pair<double, double>>& percentiles) {
  std::vector<std::pair<double, double>> knots;
  for (const auto& [p, v] : percentiles) {
    if (std::isfinite(v) && p >= 0 && p <= 1) {
      knots.emplace_back(p, v);
    }
  }
  std::sort(knots.begin(), knots.end());
  if (count == 0 || knots.size() < 2 || knots.front().first != 0 || knots.back().first != 1) {
    return std::nullopt;
  }
  // Percentiles of one table row are monotone unless perftest rounded them; keep them so.
  for (std::size_t i = 1; i < knots.size(); ++i) {
    knots[i].second = std::max(knots[i].second, knots[i - 1].second);
  }
  Distribution out;
  out.count = count;
  out.min = knots.front().second;
  out.max = knots.back().second;
  for (std::size_t i = 1; i + 1 < knots.size(); ++i) {
    out.probabilities.push_back(knots[i].first);
    out.quantiles.push_back(knots[i].second);
  }
  return out;
}

std::vector<double> pooled_draws(const std::vector<const Distribution*>& distributions) {
  std::vector<double> out;
  for (const Distribution* distribution : distributions) {
    auto drawn = distribution->draw();
    out.insert(out.end(), drawn.begin(), drawn.end());
  }
  return out;
}

std::string distribution_of_metric(const std::string& metric) {
  if (metric == "lat_typical_us" || metric == "lat_avg_us") {
    return kLatencyDistribution;
  }
  if (metric == "bw_avg_GBs" || metric == "bandwidth_GBs") {
    return kBandwidthDistribution;
  }
  return "";
}

double round_significant(double value, int digits) {
  if (value == 0 || !std::isfinite(value)) {
    return value;
  }
  int exponent = static_cast<int>(std::floor(std::log10(std::fabs(value))));
  int shift = digits - 1 - exponent;
  // Scale by an exact power of ten in the direction that keeps it an integer.
  if (shift >= 0) {
    double scale = std::pow(10.0, shift);
    return std::round(value * scale) / scale;
  }
  double scale = std::pow(10.0, -shift);
  return std::round(value / scale) * scale;
}

}  // namespace ernic
