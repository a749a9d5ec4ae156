#include "run/point_headline.h"

#include <fmt/format.h>

#include <vector>

#include "history/statistics.h"
#include "run/fairness.h"

namespace ernic {
namespace {

std::string metric_unit(const Benchmark& tool, const std::string& name) {
  for (const auto& metric : tool.metrics()) {
    if (metric.name == name) {
      return metric.unit;
    }
  }
  return "";
}

}  // namespace

std::string point_headline(const PlannedPoint& point, const PointResult& result) {
  if (result.status != PointStatus::kPassed || result.samples.empty()) {
    return result.reason;
  }
  std::string headline = point.tool->headline_metric(point.params);
  if (point.entry->multi_tenant()) {
    std::vector<double> values;
    for (const auto& sample : result.samples) {
      if (auto it = sample.metrics.find(headline); it != sample.metrics.end()) {
        values.push_back(it->second);
      }
    }
    std::string text = fmt::format("{} {:.4g} {} (median of {} tenants)", headline, median(values),
                                   metric_unit(*point.tool, headline), point.entry->tenants.size());
    if (auto fairness = point_fairness(result)) {
      text += ", " + describe_fairness(*fairness);
    }
    return text;
  }
  for (const auto& metric : point.tool->metrics()) {
    auto it = result.samples.back().metrics.find(metric.name);
    if (metric.name == headline && it != result.samples.back().metrics.end()) {
      return fmt::format("{} {:.4g} {}", metric.name, it->second, metric.unit);
    }
  }
  return "";
}

}  // namespace ernic
