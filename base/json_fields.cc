#include "base/json_fields.h"

#include <fmt/format.h>

namespace ernic {
using nlohmann::json;

JsonFields::JsonFields(const json& value, std::string file, std::string path)
    : object_(value), file_(std::move(file)), path_(std::move(path)) {
  if (!object_.is_object()) {
    mistyped(path_, "an object", object_);
  }
}

const json* JsonFields::find(const char* key) const {
  auto it = object_.find(key);
  return it == object_.end() ? nullptr : &*it;
}

JsonFields JsonFields::child(const char* key) const {
  const json* value = find(key);
  if (value == nullptr) {
    fail(path_of(key), "missing");
  }
  return JsonFields(*value, file_, path_of(key));
}

void JsonFields::fail(const std::string& path, std::string_view problem) const {
  throw JsonFieldError(path.empty() ? fmt::format("{}: {}", file_, problem)
                                    : fmt::format("{}: {}: {}", file_, path, problem));
}

void JsonFields::mistyped(const std::string& path, const char* expected, const json& found) const {
  fail(path, fmt::format("expected {}, not {}", expected, found.type_name()));
}

std::int64_t JsonFields::integer(const json& value, const std::string& path, std::int64_t min,
                                 std::int64_t max) const {
  if (!value.is_number()) {
    mistyped(path, "a number", value);
  }
  if (!value.is_number_integer()) {
    fail(path, fmt::format("expected a whole number, not {}", value.dump()));
  }
  // Unsigned values above int64's range are out of every range read here.
  if (value.is_number_unsigned() && value.get<std::uint64_t>() > static_cast<std::uint64_t>(max)) {
    fail(path, fmt::format("{} is out of range ({}..{})", value.dump(), min, max));
  }
  const auto number = value.get<std::int64_t>();
  if (number < min || number > max) {
    fail(path, fmt::format("{} is out of range ({}..{})", number, min, max));
  }
  return number;
}

json parse_json_file_text(std::string_view text, const std::string& file) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    throw JsonFieldError(fmt::format("{}: not JSON: {}", file, e.what()));
  }
}

}  // namespace ernic
