#include "scenario/overrides.h"

#include <fmt/format.h>

#include <charconv>
#include <optional>
#include <sstream>

namespace ernic {
namespace {

std::optional<std::size_t> list_index(const std::string& key) {
  std::size_t index = 0;
  auto [end, error] = std::from_chars(key.data(), key.data() + key.size(), index);
  if (error != std::errc() || end != key.data() + key.size()) {
    return std::nullopt;
  }
  return index;
}

// The item of `list` that `key` names: its index, or the value of its `name`.
std::optional<YAML::Node> list_item(const YAML::Node& list, const std::string& key) {
  if (auto index = list_index(key); index && *index < list.size()) {
    return list[*index];
  }
  std::optional<YAML::Node> found;
  for (std::size_t j = 0; j < list.size(); ++j) {
    if (list[j].IsMap() && list[j]["name"] && list[j]["name"].IsScalar() &&
        list[j]["name"].Scalar() == key) {
      found = list[j];
    }
  }
  return found;
}

// Applies one `a.b.c=value`; returns "" or what is wrong with it.
std::string apply_override(YAML::Node root, const std::string& path, const YAML::Node& value) {
  std::vector<std::string> keys;
  std::stringstream stream(path);
  for (std::string key; std::getline(stream, key, '.');) {
    if (key.empty()) {
      return "empty key in the path";
    }
    keys.push_back(key);
  }
  if (keys.empty() || path.back() == '.') {
    return "empty key in the path";
  }
  YAML::Node node = root;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const std::string& key = keys[i];
    bool last = i + 1 == keys.size();
    if (node.IsSequence()) {
      std::optional<YAML::Node> item = list_item(node, key);
      if (!item) {
        return fmt::format("no list item '{}' (give an index or an item's name)", key);
      }
      if (last) {
        return "cannot replace a whole list item; set one of its keys";
      }
      node.reset(*item);
      continue;
    }
    if (!node.IsMap() && !node.IsNull()) {
      return fmt::format("'{}' is not a mapping", keys[i > 0 ? i - 1 : 0]);
    }
    if (last) {
      node[key] = value;
      return "";
    }
    YAML::Node child = node[key];
    node.reset(child);
  }
  return "";
}

}  // namespace

void apply_overrides(YAML::Node root, const std::vector<std::string>& assignments,
                     Diagnostics& out) {
  for (const auto& assignment : assignments) {
    auto fail = [&](const std::string& path, const std::string& message) {
      out.push_back(Diagnostic{.file = "--set", .path = path, .message = message});
    };
    auto equals = assignment.find('=');
    if (equals == std::string::npos || equals == 0) {
      fail(assignment, "expected key.path=value");
      continue;
    }
    std::string path = assignment.substr(0, equals);
    YAML::Node value;
    try {
      value = YAML::Load(assignment.substr(equals + 1));
    } catch (const YAML::Exception& e) {
      fail(path, fmt::format("the value is not valid YAML: {}", e.msg));
      continue;
    }
    if (std::string problem = apply_override(root, path, value); !problem.empty()) {
      fail(path, problem);
    }
  }
}

}  // namespace ernic
