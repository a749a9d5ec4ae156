#include "base/schema.h"

#include <arpa/inet.h>
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>

#include "base/edit_distance.h"
#include "base/units.h"

namespace ernic {
namespace {

std::string join_path(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

std::string describe_found(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
      return "nothing";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Scalar:
      return fmt::format("'{}'", node.Scalar());
    default:
      return "an undefined value";
  }
}

std::string expectation(const FieldSchema& field, ValueKind kind) {
  switch (kind) {
    case ValueKind::kString:
      return "a string";
    case ValueKind::kInteger:
      if (field.maximum > 0) {
        return fmt::format("a whole number from {} to {}", field.minimum, field.maximum);
      }
      return fmt::format("a whole number of at least {}", field.minimum);
    case ValueKind::kNumber:
      return "a number";
    case ValueKind::kBoolean:
      return "true or false";
    case ValueKind::kSize:
      return "a size such as 4096, 4KiB or 1MiB";
    case ValueKind::kDuration:
      return "a duration such as 10s, 500ms or 1m30s";
    case ValueKind::kBandwidth:
      return "a bit rate such as 0 (unlimited), 100M or 10G";
    case ValueKind::kEnum: {
      std::string values;
      for (const auto& v : field.enum_values) {
        values += (values.empty() ? "" : ", ") + v;
      }
      return "one of " + values;
    }
    case ValueKind::kIpv4:
      return "an IPv4 address such as 10.77.0.1";
    case ValueKind::kCidr:
      return "an IPv4 subnet such as 10.77.0.0/24";
    case ValueKind::kObject:
      return "a mapping";
    case ValueKind::kList:
      return "a list";
    case ValueKind::kStringMap:
      return "a mapping of names to values";
  }
  return "a value";
}

bool in_range(std::optional<long long> value, const FieldSchema& field) {
  return value && *value >= field.minimum && (field.maximum == 0 || *value <= field.maximum);
}

bool valid_ipv4(const std::string& text) {
  in_addr address{};
  return ::inet_pton(AF_INET, text.c_str(), &address) == 1;
}

bool valid_cidr(const std::string& text) {
  auto slash = text.find('/');
  if (slash == std::string::npos) {
    return false;
  }
  auto length = parse_integer(text.substr(slash + 1));
  return valid_ipv4(text.substr(0, slash)) && length && *length >= 8 && *length <= 30;
}

// Validates a scalar of `kind`; returns "" when valid, else the message.
std::string check_scalar(const YAML::Node& node, const FieldSchema& field, ValueKind kind) {
  if (!node.IsScalar()) {
    return fmt::format("expected {}, found {}", expectation(field, kind), describe_found(node));
  }
  const std::string& text = node.Scalar();
  auto fail = [&] {
    return fmt::format("expected {}, found {}", expectation(field, kind), describe_found(node));
  };
  switch (kind) {
    case ValueKind::kString:
      return "";
    case ValueKind::kInteger:
      return in_range(parse_integer(text), field) ? "" : fail();
    case ValueKind::kNumber: {
      // Out of range (1e400, 1e-400) fails too: whatever reads the value as a double would.
      char* end = nullptr;
      errno = 0;
      double value = std::strtod(text.c_str(), &end);
      return (text.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(value)) ? fail()
                                                                                        : "";
    }
    case ValueKind::kBoolean:
      return (text == "true" || text == "false") ? "" : fail();
    case ValueKind::kSize: {
      auto size = parse_size(text);
      return (!size || *size == 0) ? fail() : "";
    }
    case ValueKind::kDuration: {
      auto duration = parse_duration(text);
      return (!duration || duration->count() <= 0) ? fail() : "";
    }
    case ValueKind::kBandwidth:
      return parse_bandwidth(text) ? "" : fail();
    case ValueKind::kEnum: {
      if (std::find(field.enum_values.begin(), field.enum_values.end(), text) !=
          field.enum_values.end()) {
        return "";
      }
      std::string message = fail();
      if (auto guess = closest_match(text, field.enum_values); !guess.empty()) {
        message += fmt::format("; did you mean '{}'?", guess);
      }
      return message;
    }
    case ValueKind::kIpv4:
      return valid_ipv4(text) ? "" : fail();
    case ValueKind::kCidr:
      return valid_cidr(text) ? "" : fail();
    default:
      return fail();
  }
}

void validate_size_range(const YAML::Node& node, const FieldSchema& field, const std::string& file,
                         const std::string& path, Diagnostics& out) {
  static const ObjectSchema kRange = [] {
    ObjectSchema range;
    range.fields = {
        {.name = "from", .kind = ValueKind::kSize, .required = true},
        {.name = "to", .kind = ValueKind::kSize, .required = true},
        {.name = "factor", .kind = ValueKind::kInteger, .minimum = 2, .maximum = 1024},
    };
    return range;
  }();
  std::size_t before = out.size();
  validate(node, kRange, file, path, out);
  if (out.size() != before) {
    return;
  }
  auto from = parse_size(node["from"].Scalar());
  auto to = parse_size(node["to"].Scalar());
  if (*from > *to) {
    out.push_back(diagnostic_at(node, file, path,
                                fmt::format("the range goes from {} down to {}; 'from' must not be "
                                            "larger than 'to'",
                                            node["from"].Scalar(), node["to"].Scalar())));
  }
  (void)field;
}

// The list form of an `or_list` field: one mapping per entry, as many as the scalar allows.
void validate_entries(const YAML::Node& node, const FieldSchema& field, const std::string& file,
                      const std::string& path, Diagnostics& out) {
  const auto count = static_cast<long long>(node.size());
  const long long least = std::max(1LL, field.minimum);
  if (count < least || (field.maximum > 0 && count > field.maximum)) {
    out.push_back(diagnostic_at(
        node, file, path,
        field.maximum > 0
            ? fmt::format("expected from {} to {} entries, found {}", least, field.maximum, count)
            : fmt::format("expected at least {} entries, found {}", least, count)));
  }
  for (std::size_t i = 0; i < node.size(); ++i) {
    std::string item_path = fmt::format("{}[{}]", path, i);
    if (!node[i].IsMap()) {
      out.push_back(
          diagnostic_at(node[i], file, item_path,
                        fmt::format("expected a mapping, found {}", describe_found(node[i]))));
    } else {
      validate(node[i], *field.or_list, file, item_path, out);
    }
  }
}

}  // namespace

std::optional<long long> parse_integer(std::string_view text) {
  std::string_view digits = text.substr(!text.empty() && text[0] == '-' ? 1 : 0);
  if (digits.empty() || (digits.size() > 1 && digits[0] == '0')) {
    return std::nullopt;
  }
  long long value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) {
    return std::nullopt;
  }
  return value;
}

std::string scalar_text(const YAML::Node& node, const std::string& fallback) {
  return node && node.IsScalar() ? node.Scalar() : fallback;
}

std::optional<long long> integer_value(const YAML::Node& node, const FieldSchema& field) {
  if (!node || !node.IsScalar()) {
    return std::nullopt;
  }
  std::optional<long long> value = parse_integer(node.Scalar());
  return in_range(value, field) ? value : std::nullopt;
}

const FieldSchema* ObjectSchema::find(const std::string& name) const {
  for (const auto& field : fields) {
    if (field.name == name) {
      return &field;
    }
  }
  return nullptr;
}

Diagnostic diagnostic_at(const YAML::Node& node, const std::string& file, const std::string& path,
                         std::string message) {
  Diagnostic d;
  d.file = file;
  if (node.IsDefined() && node.Mark().line >= 0) {
    d.line = node.Mark().line + 1;
    d.column = node.Mark().column + 1;
  }
  d.path = path;
  d.message = std::move(message);
  return d;
}

void validate_field(const YAML::Node& node, const FieldSchema& field, const std::string& file,
                    const std::string& path, Diagnostics& out) {
  if (field.kind == ValueKind::kObject) {
    if (!node.IsMap()) {
      out.push_back(diagnostic_at(
          node, file, path, fmt::format("expected a mapping, found {}", describe_found(node))));
      return;
    }
    if (field.object) {  // without one, the caller checks the keys itself
      validate(node, *field.object, file, path, out);
    }
    return;
  }
  if (field.kind == ValueKind::kList) {
    if (!node.IsSequence()) {
      out.push_back(diagnostic_at(node, file, path,
                                  fmt::format("expected a list, found {}", describe_found(node))));
      return;
    }
    for (std::size_t i = 0; i < node.size(); ++i) {
      std::string item_path = fmt::format("{}[{}]", path, i);
      if (field.element == ValueKind::kObject) {
        if (!node[i].IsMap()) {
          out.push_back(
              diagnostic_at(node[i], file, item_path,
                            fmt::format("expected a mapping, found {}", describe_found(node[i]))));
        } else if (field.object) {  // without one, the caller checks items itself
          validate(node[i], *field.object, file, item_path, out);
        }
      } else if (auto message = check_scalar(node[i], field, field.element); !message.empty()) {
        out.push_back(diagnostic_at(node[i], file, item_path, message));
      }
    }
    return;
  }
  if (field.kind == ValueKind::kStringMap) {
    if (!node.IsMap()) {
      out.push_back(diagnostic_at(
          node, file, path,
          fmt::format("expected a mapping of names to values, found {}", describe_found(node))));
      return;
    }
    for (auto it = node.begin(); it != node.end(); ++it) {
      if (!it->second.IsScalar()) {
        out.push_back(diagnostic_at(
            it->second, file, join_path(path, it->first.Scalar()),
            fmt::format("expected a single value, found {}", describe_found(it->second))));
      }
    }
    return;
  }
  if (field.or_list && node.IsSequence()) {
    validate_entries(node, field, file, path, out);
    return;
  }
  if (field.matrix && node.IsSequence()) {
    if (node.size() == 0) {
      out.push_back(
          diagnostic_at(node, file, path, "expected at least one value, found an empty list"));
    }
    for (std::size_t i = 0; i < node.size(); ++i) {
      if (auto message = check_scalar(node[i], field, field.kind); !message.empty()) {
        out.push_back(diagnostic_at(node[i], file, fmt::format("{}[{}]", path, i), message));
      }
    }
    return;
  }
  if (field.matrix && field.kind == ValueKind::kSize && node.IsMap()) {
    validate_size_range(node, field, file, path, out);
    return;
  }
  if (auto message = check_scalar(node, field, field.kind); !message.empty()) {
    if (field.matrix) {
      message += field.kind == ValueKind::kSize ? ", a list of them, or {from, to, factor}"
                                                : ", or a list of them";
    }
    out.push_back(diagnostic_at(node, file, path, message));
  }
}

void validate(const YAML::Node& node, const ObjectSchema& schema, const std::string& file,
              const std::string& path, Diagnostics& out) {
  if (!node.IsMap()) {
    out.push_back(diagnostic_at(node, file, path,
                                fmt::format("expected a mapping, found {}", describe_found(node))));
    return;
  }
  std::vector<std::string> known;
  for (const auto& field : schema.fields) {
    known.push_back(field.name);
  }
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string key = it->first.Scalar();
    const FieldSchema* field = schema.find(key);
    std::string key_path = join_path(path, key);
    if (field == nullptr) {
      std::string message = fmt::format("unknown key '{}'", key);
      if (auto guess = closest_match(key, known); !guess.empty()) {
        message += fmt::format("; did you mean '{}'?", guess);
      } else {
        std::string list;
        for (const auto& name : known) {
          list += (list.empty() ? "" : ", ") + name;
        }
        message += fmt::format("; known keys here: {}", list);
      }
      out.push_back(diagnostic_at(it->first, file, key_path, message));
      continue;
    }
    validate_field(it->second, *field, file, key_path, out);
  }
  for (const auto& field : schema.fields) {
    if (field.required && !node[field.name]) {
      out.push_back(diagnostic_at(node, file,
                                  path.empty() ? field.name : join_path(path, field.name),
                                  fmt::format("missing required key '{}' ({})", field.name,
                                              expectation(field, field.kind))));
    }
    const YAML::Node given = node[field.name];
    bool in_effect = given && (field.kind != ValueKind::kBoolean ||
                               (given.IsScalar() && given.Scalar() == "true"));
    if (!field.needs.empty() && in_effect && !node[field.needs]) {
      out.push_back(diagnostic_at(
          given, file, join_path(path, field.name),
          fmt::format("'{}' needs '{}' in the same mapping", field.name, field.needs)));
    }
  }
}

namespace {

nlohmann::json scalar_schema(const FieldSchema& field, ValueKind kind) {
  using nlohmann::json;
  switch (kind) {
    case ValueKind::kString:
      return {{"type", "string"}};
    case ValueKind::kInteger: {
      json schema = {{"type", "integer"}, {"minimum", field.minimum}};
      if (field.maximum > 0) {
        schema["maximum"] = field.maximum;
      }
      return schema;
    }
    case ValueKind::kNumber:
      return {{"type", "number"}};
    case ValueKind::kBoolean:
      return {{"type", "boolean"}};
    case ValueKind::kSize:
      return {{"anyOf",
               json::array(
                   {{{"type", "integer"}, {"minimum", 1}},
                    {{"type", "string"},
                     {"pattern",
                      "^[0-9]+(\\.[0-9]+)?\\s*(B|K|k|KiB|M|MiB|G|GiB|T|TiB|kB|KB|MB|GB)?$"}}})}};
    case ValueKind::kDuration:
      return {{"anyOf", json::array({{{"type", "number"}, {"exclusiveMinimum", 0}},
                                     {{"type", "string"},
                                      {"pattern", "^([0-9.]+(h|m|min|s|ms|us|ns))+$"}}})}};
    case ValueKind::kBandwidth:
      return {{"anyOf", json::array({{{"type", "integer"}, {"minimum", 0}},
                                     {{"type", "string"},
                                      {"pattern", "^[0-9.]+[KkMmGgTt]?(bit|bps|bit/s)?$"}}})}};
    case ValueKind::kEnum:
      return {{"enum", field.enum_values}};
    case ValueKind::kIpv4:
      return {{"type", "string"}, {"format", "ipv4"}};
    case ValueKind::kCidr:
      return {{"type", "string"}, {"pattern", "^[0-9]{1,3}(\\.[0-9]{1,3}){3}/[0-9]{1,2}$"}};
    default:
      return json::object();
  }
}

nlohmann::json field_schema(const FieldSchema& field) {
  using nlohmann::json;
  json schema;
  if (field.kind == ValueKind::kObject) {
    schema = field.object ? to_json_schema(*field.object) : nlohmann::json{{"type", "object"}};
  } else if (field.kind == ValueKind::kList) {
    schema = {
        {"type", "array"},
        {"items", field.element == ValueKind::kObject
                      ? (field.object ? to_json_schema(*field.object) : nlohmann::json::object())
                      : scalar_schema(field, field.element)}};
  } else if (field.kind == ValueKind::kStringMap) {
    schema = {{"type", "object"},
              {"additionalProperties", {{"type", json::array({"string", "number", "boolean"})}}}};
  } else if (field.or_list) {
    json entries = {{"type", "array"},
                    {"minItems", std::max(1LL, field.minimum)},
                    {"items", to_json_schema(*field.or_list)}};
    if (field.maximum > 0) {
      entries["maxItems"] = field.maximum;
    }
    schema = {{"anyOf", json::array({scalar_schema(field, field.kind), entries})}};
  } else if (field.matrix) {
    json one = scalar_schema(field, field.kind);
    json choices = json::array({one, {{"type", "array"}, {"minItems", 1}, {"items", one}}});
    if (field.kind == ValueKind::kSize) {
      choices.push_back(
          {{"type", "object"},
           {"required", json::array({"from", "to"})},
           {"additionalProperties", false},
           {"properties",
            {{"from", one}, {"to", one}, {"factor", {{"type", "integer"}, {"minimum", 2}}}}}});
    }
    schema = {{"anyOf", choices}};
  } else {
    schema = scalar_schema(field, field.kind);
  }
  if (!field.description.empty()) {
    schema["description"] = field.description;
  }
  if (!field.default_text.empty()) {
    schema["default"] = field.default_text;
  }
  return schema;
}

}  // namespace

nlohmann::json to_json_schema(const ObjectSchema& schema) {
  nlohmann::json properties = nlohmann::json::object();
  nlohmann::json required = nlohmann::json::array();
  for (const auto& field : schema.fields) {
    properties[field.name] = field_schema(field);
    if (field.required) {
      required.push_back(field.name);
    }
  }
  nlohmann::json out = {
      {"type", "object"}, {"properties", properties}, {"additionalProperties", false}};
  if (!required.empty()) {
    out["required"] = required;
  }
  if (!schema.description.empty()) {
    out["description"] = schema.description;
  }
  return out;
}

}  // namespace ernic
