#include "run/fairness.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "history/statistics.h"

namespace ernic {

std::optional<FairnessRecord> point_fairness(const PointResult& result) {
  const PlannedPoint& point = *result.point;
  if (!point.entry->multi_tenant()) {
    return std::nullopt;
  }
  std::string metric = point.tool->headline_metric(point.params);
  for (const auto& info : point.tool->metrics()) {
    if (info.name == metric && info.better != Better::kHigher) {
      return std::nullopt;
    }
  }
  std::size_t tenants = point.entry->tenants.size();
  std::map<int, std::vector<double>> by_repetition;
  for (const auto& sample : result.samples) {
    if (auto it = sample.metrics.find(metric); it != sample.metrics.end()) {
      by_repetition[sample.repetition].push_back(it->second);
    }
  }
  FairnessRecord fairness{.metric = metric,
                          .tenants = static_cast<int>(tenants),
                          .jain = {},
                          .min_share = 1,
                          .max_share = 0,
                          .repetitions = {}};
  std::vector<double> indices;
  for (const auto& [repetition, values] : by_repetition) {
    std::optional<double> jain = jain_index(values);
    std::vector<double> share = shares(values);
    if (values.size() != tenants || !jain || share.empty()) {
      continue;  // a tenant failed: its repetition says nothing about fairness
    }
    auto [low, high] = std::minmax_element(share.begin(), share.end());
    fairness.repetitions.push_back(
        {.rep = repetition, .jain = *jain, .min_share = *low, .max_share = *high});
    fairness.min_share = std::min(fairness.min_share, *low);
    fairness.max_share = std::max(fairness.max_share, *high);
    indices.push_back(*jain);
  }
  std::optional<Statistics> spread = summarize(indices);
  if (!spread) {
    return std::nullopt;
  }
  fairness.jain = *spread;
  return fairness;
}

std::string describe_fairness(const FairnessRecord& fairness) {
  return fmt::format("J {:.3f}, shares {:.2f}-{:.2f}", fairness.jain.median, fairness.min_share,
                     fairness.max_share);
}

}  // namespace ernic
