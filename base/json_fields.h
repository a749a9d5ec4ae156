// Reading a JSON file ernicctl wrote back into its C++ types. A missing field keeps its default
// (older files and hand-made ones leave fields out), but a field of the wrong type is an error
// naming the file and the field's path ("up.json: instances[1].pid: expected a number, not
// string"): a damaged or hand-edited file is refused where it is wrong, not misread later.
#pragma once

#include <concepts>
#include <cstdint>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace ernic {

template <typename T>
inline constexpr bool kIsVector = false;
template <typename T>
inline constexpr bool kIsVector<std::vector<T>> = true;

// A field of the wrong type, or a required one missing; what() names the file and the path.
class JsonFieldError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The fields of one JSON object of a file. Nested objects are read by an overload of
// `read_fields(const JsonFields&, T&)` found beside T.
class JsonFields {
 public:
  // `value` at `path` of `file` (path "" for the file's top level); throws JsonFieldError
  // when it is not an object.
  JsonFields(const nlohmann::json& value, std::string file, std::string path = "");

  bool has(const char* key) const { return find(key) != nullptr; }
  // The value of `key` as it is, for a field that may have more than one type; null if missing.
  const nlohmann::json* find(const char* key) const;
  // The object at `key`, which must be there.
  JsonFields child(const char* key) const;

  // `out` keeps its value when `key` is missing.
  template <typename T>
  void read(const char* key, T& out) const {
    if (const nlohmann::json* value = find(key)) {
      read_value(*value, path_of(key), out);
    }
  }
  // `out` stays nullopt when `key` is missing, so that writing it back leaves it out again.
  template <typename T>
  void read(const char* key, std::optional<T>& out) const {
    if (const nlohmann::json* value = find(key)) {
      T read_value_into{};
      read_value(*value, path_of(key), read_value_into);
      out = std::move(read_value_into);
    }
  }
  // As read(), but a missing `key` is an error.
  template <typename T>
  void require(const char* key, T& out) const {
    if (find(key) == nullptr) {
      fail(path_of(key), "missing");
    }
    read(key, out);
  }

  [[noreturn]] void fail(const std::string& path, std::string_view problem) const;
  const std::string& path() const { return path_; }

 private:
  std::string path_of(const char* key) const { return path_.empty() ? key : path_ + "." + key; }
  [[noreturn]] void mistyped(const std::string& path, const char* expected,
                             const nlohmann::json& found) const;

  template <typename T>
  void read_value(const nlohmann::json& value, const std::string& path, T& out) const {
    if constexpr (std::same_as<T, std::string>) {
      if (!value.is_string()) {
        mistyped(path, "a string", value);
      }
      out = value.get<std::string>();
    } else if constexpr (std::same_as<T, bool>) {
      if (!value.is_boolean()) {
        mistyped(path, "true or false", value);
      }
      out = value.get<bool>();
    } else if constexpr (std::integral<T>) {
      static_assert(sizeof(T) < sizeof(std::int64_t) || std::is_signed_v<T>,
                    "read as an int64_t: its range must fit");
      out = static_cast<T>(integer(value, path, std::numeric_limits<T>::min(),
                                   static_cast<std::int64_t>(std::numeric_limits<T>::max())));
    } else if constexpr (kIsVector<T>) {
      if (!value.is_array()) {
        mistyped(path, "an array", value);
      }
      out.clear();
      for (std::size_t i = 0; i < value.size(); ++i) {
        read_value(value[i], path + "[" + std::to_string(i) + "]", out.emplace_back());
      }
    } else if constexpr (std::same_as<T, std::map<std::string, std::string>>) {
      if (!value.is_object()) {
        mistyped(path, "an object", value);
      }
      out.clear();
      for (const auto& [key, element] : value.items()) {
        read_value(element, path + "." + key, out[key]);
      }
    } else {
      read_fields(JsonFields(value, file_, path), out);
    }
  }

  std::int64_t integer(const nlohmann::json& value, const std::string& path, std::int64_t min,
                       std::int64_t max) const;

  const nlohmann::json& object_;
  std::string file_;
  std::string path_;
};

// `text` parsed as JSON; throws JsonFieldError naming `file` when it is not JSON.
nlohmann::json parse_json_file_text(std::string_view text, const std::string& file);

}  // namespace ernic
