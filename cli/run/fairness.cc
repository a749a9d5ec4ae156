#include "run/fairness.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "history/statistics.h"

namespace ernic {
namespace {

// Jain's index over `participants` values per repetition, in the repetitions in which every
// participant was measured (a failed one says nothing about fairness); nullopt without any.
std::optional<FairnessRecord> fairness_over(const std::string& metric, std::size_t participants,
                                            const std::map<int, std::vector<double>>& values) {
  FairnessRecord fairness{.metric = metric,
                          .tenants = static_cast<int>(participants),
                          .jain = {},
                          .min_share = 1,
                          .max_share = 0,
                          .repetitions = {}};
  std::vector<double> indices;
  for (const auto& [repetition, measured] : values) {
    std::optional<double> jain = jain_index(measured);
    std::vector<double> share = shares(measured);
    if (measured.size() != participants || !jain || share.empty()) {
      continue;
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

// The throughput a point's tenants are compared on: its headline metric, when higher is better.
std::optional<MetricInfo> throughput_of(const PlannedPoint& point) {
  std::string headline = point.tool->headline_metric(point.params);
  for (const auto& info : point.tool->metrics()) {
    if (info.name == headline) {
      return info.better == Better::kHigher ? std::optional(info) : std::nullopt;
    }
  }
  return std::nullopt;
}

// One tenant of a group's point: where its samples are.
struct Participant {
  const PointResult* result = nullptr;
  int tenant = 0;  // 0: the point has one tenant
  std::string label;
};

std::optional<double> participant_value(const Participant& member, int repetition,
                                        const std::string& metric) {
  for (const auto& sample : member.result->samples) {
    if (sample.repetition == repetition && sample.tenant == member.tenant &&
        sample.failure.empty()) {
      if (auto it = sample.metrics.find(metric); it != sample.metrics.end()) {
        return it->second;
      }
    }
  }
  return std::nullopt;
}

struct SharedMetric {
  MetricInfo metric;
  std::vector<Participant> members;
};

GroupRecord group_of_start(const Scenario& scenario, const std::vector<const PointResult*>& start) {
  GroupRecord group;
  group.group = concurrent_group_number(scenario, start.front()->point->entry->name);
  if (group.group > 0) {
    group.name = scenario.concurrent[static_cast<std::size_t>(group.group) - 1].name;
  }
  std::vector<SharedMetric> shared;
  int repetitions = 0;
  for (const PointResult* result : start) {
    const PlannedPoint& point = *result->point;
    group.points.push_back(point.id);
    repetitions = std::max(repetitions, point.repetitions);
    std::optional<MetricInfo> metric = throughput_of(point);
    if (!metric) {
      continue;  // a latency member has no share of a throughput
    }
    auto it = std::find_if(shared.begin(), shared.end(), [&](const SharedMetric& s) {
      return s.metric.name == metric->name && s.metric.unit == metric->unit;
    });
    if (it == shared.end()) {
      it = shared.insert(shared.end(), {.metric = *metric, .members = {}});
    }
    std::vector<Tenant> tenants = point.entry->all_tenants();
    for (std::size_t t = 0; t < tenants.size(); ++t) {
      bool several = point.entry->multi_tenant();
      it->members.push_back({.result = result,
                             .tenant = several ? static_cast<int>(t) + 1 : 0,
                             .label = several ? point.id + " " + tenants[t].name : point.id});
    }
  }
  for (const SharedMetric& metric : shared) {
    if (metric.members.size() < 2) {
      continue;
    }
    std::map<int, std::vector<double>> values;
    for (int repetition = 1; repetition <= repetitions; ++repetition) {
      for (const Participant& member : metric.members) {
        if (auto value = participant_value(member, repetition, metric.metric.name)) {
          values[repetition].push_back(*value);
        }
      }
    }
    if (auto fairness = fairness_over(metric.metric.name, metric.members.size(), values)) {
      fairness->unit = metric.metric.unit;
      for (const Participant& member : metric.members) {
        fairness->members.push_back(member.label);
      }
      group.fairness.push_back(std::move(*fairness));
    }
  }
  return group;
}

}  // namespace

std::optional<FairnessRecord> point_fairness(const PointResult& result) {
  const PlannedPoint& point = *result.point;
  if (!point.entry->multi_tenant()) {
    return std::nullopt;
  }
  std::optional<MetricInfo> metric = throughput_of(point);
  if (!metric) {
    return std::nullopt;
  }
  std::map<int, std::vector<double>> by_repetition;
  for (const auto& sample : result.samples) {
    if (auto it = sample.metrics.find(metric->name); it != sample.metrics.end()) {
      by_repetition[sample.repetition].push_back(it->second);
    }
  }
  return fairness_over(metric->name, point.entry->tenants.size(), by_repetition);
}

int concurrent_group_number(const Scenario& scenario, const std::string& entry) {
  for (std::size_t g = 0; g < scenario.concurrent.size(); ++g) {
    const auto& names = scenario.concurrent[g].benchmarks;
    if (std::find(names.begin(), names.end(), entry) != names.end()) {
      return static_cast<int>(g) + 1;
    }
  }
  return 0;
}

std::vector<GroupRecord> group_fairness(const Scenario& scenario, const RunResult& run) {
  std::map<int, std::vector<const PointResult*>> starts;  // by PlannedPoint::together
  for (const auto& result : run.points) {
    if (result.point->together >= 0) {
      starts[result.point->together].push_back(&result);
    }
  }
  std::vector<GroupRecord> groups;
  for (const auto& [together, start] : starts) {
    groups.push_back(group_of_start(scenario, start));
  }
  return groups;
}

std::string describe_fairness(const FairnessRecord& fairness) {
  return fmt::format("J {:.3f}, shares {:.2f}-{:.2f}", fairness.jain.median, fairness.min_share,
                     fairness.max_share);
}

std::string describe_group_fairness(const FairnessRecord& fairness) {
  std::string members;
  for (const auto& member : fairness.members) {
    members += (members.empty() ? "" : ", ") + member;
  }
  return fmt::format("J {:.3f} over {} of {}, shares {:.2f}-{:.2f}", fairness.jain.median,
                     fairness.metric, members, fairness.min_share, fairness.max_share);
}

}  // namespace ernic
