#include "scenario/param_matrix.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/units.h"

namespace ernic {
namespace {

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

}  // namespace ernic
