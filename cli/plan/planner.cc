#include <fmt/format.h>

#include <cmath>

#include "common/units.h"
#include "plan/plan.h"
#include "platform/platform.h"

namespace ernic {
namespace {

constexpr std::uint16_t kFirstPort = 20000;

std::string canonical(const std::string& text, ValueKind kind) {
  switch (kind) {
    case ValueKind::kSize:
      return std::to_string(*parse_size(text));
    case ValueKind::kDuration: {
      double ms = static_cast<double>(parse_duration(text)->count()) / 1e6;
      return fmt::format("{}", ms);
    }
    default:
      return text;
  }
}

bool valid_default(const FieldSchema& field) {
  const std::string& text = field.default_text;
  if (text.empty()) {
    return false;
  }
  switch (field.kind) {
    case ValueKind::kSize:
      return parse_size(text).has_value();
    case ValueKind::kDuration:
      return parse_duration(text).has_value();
    case ValueKind::kBandwidth:
      return parse_bandwidth(text).has_value();
    case ValueKind::kBoolean:
      return text == "true" || text == "false";
    case ValueKind::kInteger:
      return text.find_first_not_of("0123456789") == std::string::npos;
    case ValueKind::kEnum:
      return std::find(field.enum_values.begin(), field.enum_values.end(), text) !=
             field.enum_values.end();
    case ValueKind::kString:
    case ValueKind::kNumber:
      return true;
    default:
      return false;
  }
}

std::vector<std::string> values_of(const YAML::Node& node, const FieldSchema& field) {
  std::vector<std::string> values;
  if (node.IsSequence()) {
    for (const auto& item : node) {
      values.push_back(canonical(item.Scalar(), field.kind));
    }
  } else if (node.IsMap()) {  // a size range {from, to, factor}
    std::uint64_t from = *parse_size(node["from"].Scalar());
    std::uint64_t to = *parse_size(node["to"].Scalar());
    std::uint64_t factor = node["factor"] ? node["factor"].as<std::uint64_t>() : 2;
    for (std::uint64_t size = from; size <= to; size *= factor) {
      values.push_back(std::to_string(size));
      if (size > to / factor) {
        break;
      }
    }
  } else {
    values.push_back(canonical(node.Scalar(), field.kind));
  }
  return values;
}

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

std::vector<PointParams> expand_params(const YAML::Node& params, const ObjectSchema& schema) {
  std::vector<PointParams> points(1);
  for (const auto& field : schema.fields) {
    std::vector<std::string> values;
    if (params && params[field.name]) {
      if (field.kind == ValueKind::kList || field.kind == ValueKind::kObject ||
          field.kind == ValueKind::kStringMap) {
        // Structured parameters are passed to the module as YAML text.
        YAML::Emitter emitter;
        emitter << YAML::Flow << params[field.name];
        values.push_back(emitter.c_str());
      } else {
        values = values_of(params[field.name], field);
      }
    } else if (valid_default(field)) {
      values.push_back(canonical(field.default_text, field.kind));
    } else {
      continue;
    }
    std::vector<PointParams> expanded;
    for (const auto& point : points) {
      for (const auto& value : values) {
        PointParams next = point;
        next.set(field.name, value);
        expanded.push_back(std::move(next));
      }
    }
    points = std::move(expanded);
  }
  return points;
}

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
