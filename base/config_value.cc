#include "base/config_value.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <initializer_list>
#include <stdexcept>

#include "base/units.h"

namespace ernic {

struct Config::Field {
  std::string name;
  ValueKind kind = ValueKind::kString;
  bool present = false;
  SourceLocation location;
  std::string text;  // a scalar as written
  long long integer = 0;
  double number = 0;
  bool boolean = false;
  std::uint64_t amount = 0;  // size: bytes; bandwidth: bits per second
  std::chrono::milliseconds duration{0};
  std::vector<std::string> texts;  // a list of scalars (or a matrix field's values)
  std::vector<Config> objects;     // kObject: one; a list of objects (or_list's too): each
  bool listable = false;           // declared with or_list
  std::vector<std::pair<std::string, std::string>> entries;  // kStringMap
};

struct Config::Data {
  SourceLocation location;
  std::vector<Field> fields;
};

namespace {

const char* kind_name(ValueKind kind) {
  switch (kind) {
    case ValueKind::kString:
      return "string";
    case ValueKind::kInteger:
      return "integer";
    case ValueKind::kNumber:
      return "number";
    case ValueKind::kBoolean:
      return "boolean";
    case ValueKind::kSize:
      return "size";
    case ValueKind::kDuration:
      return "duration";
    case ValueKind::kBandwidth:
      return "bandwidth";
    case ValueKind::kEnum:
      return "enum";
    case ValueKind::kIpv4:
      return "ipv4";
    case ValueKind::kCidr:
      return "cidr";
    case ValueKind::kObject:
      return "object";
    case ValueKind::kList:
      return "list";
    case ValueKind::kStringMap:
      return "string map";
  }
  return "value";
}

bool is_scalar_kind(ValueKind kind) {
  return kind != ValueKind::kObject && kind != ValueKind::kList && kind != ValueKind::kStringMap;
}

SourceLocation location_of(const YAML::Node& node, const std::string& file,
                           const std::string& path) {
  Diagnostic located = diagnostic_at(node, file, path, "");
  return {.file = file, .line = located.line, .column = located.column, .path = path};
}

std::string join(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

[[noreturn]] void not_of_kind(const SourceLocation& where, ValueKind kind, const YAML::Node& node) {
  throw std::invalid_argument(
      fmt::format("{}:{}:{}: {}: expected a {} value, found '{}' (the scenario was not validated)",
                  where.file, where.line, where.column, where.path, kind_name(kind),
                  node.IsScalar() ? node.Scalar() : std::string("a collection")));
}

// Stores a parsed value; false when there is none.
template <typename Value, typename Target>
bool take(const std::optional<Value>& value, Target& target) {
  if (value) {
    target = *value;
  }
  return value.has_value();
}

// Converts one scalar of `kind` into `field` with the parsers validation uses.
void convert_scalar(const YAML::Node& node, ValueKind kind, Config::Field& field) {
  if (!node.IsScalar()) {
    not_of_kind(field.location, kind, node);
  }
  field.text = node.Scalar();
  const std::string& text = field.text;
  bool ok = true;
  switch (kind) {
    case ValueKind::kInteger:
      ok = take(parse_integer(text), field.integer);
      field.number = static_cast<double>(field.integer);
      break;
    case ValueKind::kNumber: {
      char* end = nullptr;
      errno = 0;
      field.number = std::strtod(text.c_str(), &end);
      ok = !text.empty() && *end == '\0' && errno != ERANGE;
      break;
    }
    case ValueKind::kBoolean:
      ok = text == "true" || text == "false";
      field.boolean = text == "true";
      break;
    case ValueKind::kSize:
      ok = take(parse_size(text), field.amount);
      break;
    case ValueKind::kDuration: {
      std::chrono::nanoseconds duration{0};
      ok = take(parse_duration(text), duration);
      field.duration = std::chrono::duration_cast<std::chrono::milliseconds>(duration);
      break;
    }
    case ValueKind::kBandwidth:
      ok = take(parse_bandwidth(text), field.amount);
      break;
    default:  // string, enum, ipv4, cidr: the text itself
      break;
  }
  if (!ok) {
    not_of_kind(field.location, kind, node);
  }
}

void convert(const YAML::Node& node, const FieldSchema& schema, Config::Field& field,
             const std::string& file) {
  const std::string& path = field.location.path;
  static const ObjectSchema kUndeclared;  // an object whose keys the caller checks itself
  const ObjectSchema& object = schema.object ? *schema.object : kUndeclared;
  switch (schema.kind) {
    case ValueKind::kObject:
      field.objects.push_back(make_config(node, object, file, path));
      return;
    case ValueKind::kList:
      if (!node.IsSequence()) {
        not_of_kind(field.location, schema.kind, node);
      }
      for (std::size_t i = 0; i < node.size(); ++i) {
        std::string item_path = fmt::format("{}[{}]", path, i);
        if (schema.element == ValueKind::kObject) {
          field.objects.push_back(make_config(node[i], object, file, item_path));
        } else {
          Config::Field item{.location = location_of(node[i], file, item_path)};
          convert_scalar(node[i], schema.element, item);
          field.texts.push_back(item.text);
        }
      }
      return;
    case ValueKind::kStringMap:
      if (!node.IsMap()) {
        not_of_kind(field.location, schema.kind, node);
      }
      for (auto it = node.begin(); it != node.end(); ++it) {
        field.entries.emplace_back(it->first.Scalar(), scalar_text(it->second));
      }
      return;
    default:
      if (schema.or_list && node.IsSequence()) {
        for (std::size_t i = 0; i < node.size(); ++i) {
          field.objects.push_back(
              make_config(node[i], *schema.or_list, file, fmt::format("{}[{}]", path, i)));
        }
        return;
      }
      if (schema.matrix && node.IsSequence()) {  // the planner expands matrix values
        for (const auto& item : node) {
          field.texts.push_back(scalar_text(item));
        }
        return;
      }
      convert_scalar(node, schema.kind, field);
  }
}

}  // namespace

Config::Config() : data_(std::make_shared<const Data>()) {}

Config::Config(std::shared_ptr<const Data> data) : data_(std::move(data)) {}

Config make_config(const YAML::Node& node, const ObjectSchema& schema, const std::string& file,
                   const std::string& path) {
  auto data = std::make_shared<Config::Data>();
  data->location = location_of(node, file, path);
  if (node && !node.IsNull() && !node.IsMap()) {
    throw std::invalid_argument(fmt::format("{}:{}:{}: {}: expected a mapping", file,
                                            data->location.line, data->location.column, path));
  }
  for (const auto& declared : schema.fields) {
    Config::Field field{
        .name = declared.name, .kind = declared.kind, .listable = declared.or_list != nullptr};
    const YAML::Node value = node && node.IsMap() ? node[declared.name] : YAML::Node();
    field.location = location_of(value, file, join(path, declared.name));
    if (value && !value.IsNull()) {
      field.present = true;
      convert(value, declared, field, file);
    } else if (declared.kind == ValueKind::kObject) {
      // An absent object still declares its keys, so that reading them gives the fallbacks.
      field.objects.push_back(make_config(YAML::Node(),
                                          declared.object ? *declared.object : ObjectSchema{}, file,
                                          field.location.path));
    }
    data->fields.push_back(std::move(field));
  }
  return Config(std::move(data));
}

const Config::Field& Config::field(const std::string& key) const {
  for (const auto& candidate : data_->fields) {
    if (candidate.name == key) {
      return candidate;
    }
  }
  throw std::logic_error(
      fmt::format("configuration key '{}' is read but its schema does not declare it (at '{}')",
                  key, data_->location.path));
}

namespace {

// The field when it holds one of `kinds`; reading it as another kind is a programming error.
const Config::Field& of_kind(const Config::Field& field, std::initializer_list<ValueKind> kinds,
                             const char* wanted) {
  for (ValueKind kind : kinds) {
    if (field.kind == kind) {
      return field;
    }
  }
  throw std::logic_error(fmt::format("configuration key '{}' is declared as a {}, read as {}",
                                     field.name, kind_name(field.kind), wanted));
}

}  // namespace

bool Config::has(const std::string& key) const {
  return field(key).present;
}

std::string Config::text(const std::string& key, const std::string& fallback) const {
  const Field& found = field(key);
  if (!is_scalar_kind(found.kind)) {
    of_kind(found, {}, "text");
  }
  return found.present && found.texts.empty() ? found.text : fallback;
}

long long Config::integer(const std::string& key, long long fallback) const {
  const Field& found = of_kind(field(key), {ValueKind::kInteger}, "an integer");
  return found.present && found.objects.empty() ? found.integer : fallback;
}

double Config::number(const std::string& key, double fallback) const {
  const Field& found = of_kind(field(key), {ValueKind::kNumber, ValueKind::kInteger}, "a number");
  return found.present ? found.number : fallback;
}

bool Config::flag(const std::string& key, bool fallback) const {
  const Field& found = of_kind(field(key), {ValueKind::kBoolean}, "a flag");
  return found.present ? found.boolean : fallback;
}

std::uint64_t Config::bytes(const std::string& key, std::uint64_t fallback) const {
  const Field& found = of_kind(field(key), {ValueKind::kSize}, "a size");
  return found.present ? found.amount : fallback;
}

std::chrono::milliseconds Config::duration(const std::string& key,
                                           std::chrono::milliseconds fallback) const {
  const Field& found = of_kind(field(key), {ValueKind::kDuration}, "a duration");
  return found.present ? found.duration : fallback;
}

std::uint64_t Config::bits_per_second(const std::string& key, std::uint64_t fallback) const {
  const Field& found = of_kind(field(key), {ValueKind::kBandwidth}, "a bit rate");
  return found.present ? found.amount : fallback;
}

std::vector<std::string> Config::texts(const std::string& key) const {
  const Field& found = field(key);
  if (found.kind == ValueKind::kList && found.objects.empty()) {
    return found.texts;
  }
  if (!is_scalar_kind(found.kind)) {
    of_kind(found, {}, "a list of values");
  }
  if (!found.present) {
    return {};
  }
  return found.texts.empty() ? std::vector<std::string>{found.text} : found.texts;
}

Config Config::object(const std::string& key) const {
  const Field& found = of_kind(field(key), {ValueKind::kObject}, "an object");
  return found.objects.front();
}

std::vector<Config> Config::objects(const std::string& key) const {
  const Field& found = field(key);
  return found.listable ? found.objects
                        : of_kind(found, {ValueKind::kList}, "a list of objects").objects;
}

std::vector<std::pair<std::string, std::string>> Config::string_map(const std::string& key) const {
  return of_kind(field(key), {ValueKind::kStringMap}, "a string map").entries;
}

SourceLocation Config::location(const std::string& key) const {
  const Field& found = field(key);
  return found.present ? found.location : data_->location;
}

SourceLocation Config::location() const {
  return data_->location;
}

Diagnostic Config::diagnostic(const std::string& key, std::string message) const {
  SourceLocation where = location(key);
  return Diagnostic{.file = where.file,
                    .line = where.line,
                    .column = where.column,
                    .path = field(key).location.path,
                    .message = std::move(message)};
}

}  // namespace ernic
