#pragma once

#include <yaml-cpp/yaml.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/diagnostics.h"

namespace ernic {

// The shape of a scenario, declared once and used three ways: to validate a file with located
// errors, to suggest the closest key for a typo, and to emit scenarios/schema.json.
enum class ValueKind {
  kString,
  kInteger,
  kNumber,
  kBoolean,
  kSize,       // 4096, 4KiB, 1MiB, 1M (= MiB)
  kDuration,   // 10s, 500ms, 1m30s
  kBandwidth,  // 0 (unlimited), 100M, 1G, 10Gbit (bits per second, like iperf3 -b)
  kEnum,
  kIpv4,
  kCidr,  // 10.77.0.0/24
  kObject,
  kList,       // list of `element`
  kStringMap,  // free-form map of string to scalar (sysctl values, env)
};

struct ObjectSchema;

struct FieldSchema {
  std::string name;
  ValueKind kind = ValueKind::kString;
  std::string description;
  bool required = false;
  // A matrix field takes one value or a list of them; each value becomes its own point.
  // Matrix size fields also take a range {from, to, factor}.
  bool matrix = false;
  std::vector<std::string> enum_values;        // kEnum
  std::shared_ptr<const ObjectSchema> object;  // kObject, or the element of a kList of objects
  ValueKind element = ValueKind::kObject;      // kList
  std::string default_text;                    // shown in docs and the JSON Schema
  // kInteger: a whole number in decimal, without leading zeros (YAML 1.1 and yaml-cpp read
  // 010 as octal), that fits a long long and lies in [minimum, maximum]. Reading a validated
  // value into a type that holds that range (as<int>() for a bounded key) cannot fail.
  long long minimum = 0;
  long long maximum = 0;  // 0 = no maximum
  // A scalar field that may instead be a list of mappings of this schema, one entry per item
  // it counts (the embedded emulator's `instances: 2` or `instances: [{on: a}, {on: b}]`);
  // `maximum` bounds the entries too.
  std::shared_ptr<const ObjectSchema> or_list;
  // Another key of the same mapping this one needs when given (a kBoolean: when true), e.g.
  // perftest's `sustained` needs `duration`.
  std::string needs;
};

struct ObjectSchema {
  std::string description;
  std::vector<FieldSchema> fields;

  const FieldSchema* find(const std::string& name) const;
};

// Validates `node` against `schema`, appending every problem found (not just the first).
// `path` is the key path of `node`, "" at the top.
void validate(const YAML::Node& node, const ObjectSchema& schema, const std::string& file,
              const std::string& path, Diagnostics& out);
// Validates one scalar or matrix value of a field.
void validate_field(const YAML::Node& node, const FieldSchema& field, const std::string& file,
                    const std::string& path, Diagnostics& out);

// The value of a kInteger text, as validation reads it: decimal digits with an optional '-',
// no leading zero, within long long; nullopt otherwise.
std::optional<long long> parse_integer(std::string_view text);
// The value of `node` when it is valid for the kInteger `field`; nullopt otherwise (validation
// reports why).
std::optional<long long> integer_value(const YAML::Node& node, const FieldSchema& field);

// The text of a scalar node; `fallback` when it is missing or not a scalar.
std::string scalar_text(const YAML::Node& node, const std::string& fallback = "");

// Location helpers for diagnostics built outside validate().
Diagnostic diagnostic_at(const YAML::Node& node, const std::string& file, const std::string& path,
                         std::string message);

// JSON Schema (draft 2020-12) of an object schema, for editors.
nlohmann::json to_json_schema(const ObjectSchema& schema);

}  // namespace ernic
