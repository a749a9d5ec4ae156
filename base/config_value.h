#pragma once

#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/diagnostics.h"
#include "base/schema.h"

namespace ernic {

// Where a value was written in the scenario.
struct SourceLocation {
  std::string file;
  int line = 0;  // 1-based; 0 when unknown
  int column = 0;
  std::string path;  // key path, e.g. "hosts[1].ssh.port"
};

// A module's or provider's configuration as typed values: made once by the schema from the
// validated YAML (make_config), then read through accessors with explicit fallbacks. Every
// declared field has the C++ type of its ValueKind: string, enum, ipv4 and cidr are text;
// integer a long long; number a double; boolean a bool; size bytes; duration milliseconds;
// bandwidth bits per second; object a Config; list a list of Config or of scalars; string map
// ordered name/value pairs.
//
// Reading a key the schema does not declare, or reading it as another kind, is a programming
// error and throws std::logic_error naming the key: each key is declared once, in the schema.
// Copies share the values.
class Config {
 public:
  // An object with no declared keys.
  Config();

  bool has(const std::string& key) const;
  // The scalar as written, whatever its kind (a size stays "4KiB").
  std::string text(const std::string& key, const std::string& fallback) const;
  long long integer(const std::string& key, long long fallback) const;
  double number(const std::string& key, double fallback) const;  // also reads an integer
  bool flag(const std::string& key, bool fallback) const;
  std::uint64_t bytes(const std::string& key, std::uint64_t fallback) const;
  std::chrono::milliseconds duration(const std::string& key,
                                     std::chrono::milliseconds fallback) const;
  std::uint64_t bits_per_second(const std::string& key, std::uint64_t fallback) const;
  // A list of scalars as written; a single scalar is a list of one; empty when absent.
  std::vector<std::string> texts(const std::string& key) const;
  // An object; one with no values (every has() false) when absent.
  Config object(const std::string& key) const;
  // A list of objects; empty when absent.
  std::vector<Config> objects(const std::string& key) const;
  // A string map in the file's order; empty when absent.
  std::vector<std::pair<std::string, std::string>> string_map(const std::string& key) const;

  // Where the value of `key` was written; where this object was when the key is absent.
  SourceLocation location(const std::string& key) const;
  SourceLocation location() const;
  // A diagnostic located at `key` (or at this object when it is absent).
  Diagnostic diagnostic(const std::string& key, std::string message) const;

  struct Field;
  struct Data;

 private:
  friend Config make_config(const YAML::Node& node, const ObjectSchema& schema,
                            const std::string& file, const std::string& path);
  explicit Config(std::shared_ptr<const Data> data);
  const Field& field(const std::string& key) const;

  std::shared_ptr<const Data> data_;
};

// The typed configuration of `node`, an object `schema` describes, as validate() has accepted
// it (`file` and `path` locate it, as in validate()). Keys the schema does not declare are left
// out (validation reports them). Throws std::invalid_argument naming the path for a value that
// is not of its declared kind, which validation would have refused.
Config make_config(const YAML::Node& node, const ObjectSchema& schema, const std::string& file = "",
                   const std::string& path = "");

}  // namespace ernic
