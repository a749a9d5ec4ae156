#include <fmt/format.h>

#include "base/units.h"
#include "plan/plan.h"
#include "scenario/param_matrix.h"
#include "scenario/platform.h"

namespace ernic {
namespace {

constexpr std::uint16_t kFirstPort = 20000;

std::string display_value(const std::string& value, const FieldSchema& field) {
  if (field.kind == ValueKind::kSize) {
    return format_size(std::stoull(value));
  }
  return value;
}

// The k-th points of a concurrent group's entries start together (the semantic checks made sure
// the entries have as many points).
void group_points(const Scenario& scenario, Plan& plan) {
  for (std::size_t g = 0; g < scenario.concurrent.size(); ++g) {
    const ConcurrentGroup& group = scenario.concurrent[g];
    std::vector<std::vector<int>> by_entry;
    for (const auto& name : group.benchmarks) {
      std::vector<int> points;
      for (const auto& point : plan.points) {
        if (point.entry->name == name) {
          points.push_back(point.index);
        }
      }
      by_entry.push_back(std::move(points));
    }
    for (std::size_t k = 0; !by_entry.empty() && k < by_entry.front().size(); ++k) {
      PlannedStart start{.group = static_cast<int>(g) + 1, .name = group.name, .points = {}};
      for (const auto& points : by_entry) {
        if (k < points.size()) {
          start.points.push_back(points[k]);
          plan.points[static_cast<std::size_t>(points[k])].together =
              static_cast<int>(plan.together.size());
        }
      }
      plan.together.push_back(std::move(start));
    }
  }
}

}  // namespace

Plan make_plan(const Scenario& scenario, const Platform& platform) {
  Plan plan;
  plan.scenario = &scenario;
  // A fresh port per point and tenant: no waiting for the previous server's port to be freed.
  std::uint16_t next_port = kFirstPort;
  for (const auto& entry : scenario.benchmarks) {
    const Benchmark* tool = platform.tool(entry.tool);
    const ObjectSchema& schema = tool->params();
    std::uint16_t next_fixed_port = entry.base_port;
    for (auto& params : expand_params(entry.params, schema)) {
      PlannedPoint point;
      point.index = static_cast<int>(plan.points.size());
      point.entry = &entry;
      point.tool = tool;
      std::string labels;
      for (const auto& field : schema.fields) {
        if (field.matrix && params.has(field.name)) {
          labels += fmt::format("{}{}={}", labels.empty() ? "" : ",", field.name,
                                display_value(params.text(field.name), field));
        }
      }
      point.id = labels.empty() ? entry.name : fmt::format("{}[{}]", entry.name, labels);
      point.params = std::move(params);
      point.repetitions = entry.repetitions;
      point.port_fixed = entry.base_port != 0;
      for (std::size_t t = 0; t < entry.all_tenants().size(); ++t) {
        std::uint16_t planned = next_port++;  // counted for every point, as its index is
        point.ports.push_back(point.port_fixed ? next_fixed_port++ : planned);
      }
      point.port = point.ports.front();
      plan.points.push_back(std::move(point));
    }
  }
  group_points(scenario, plan);
  return plan;
}

}  // namespace ernic
