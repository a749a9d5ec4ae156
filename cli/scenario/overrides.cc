#include "scenario/overrides.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <optional>
#include <sstream>

#include "base/schema.h"

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

// What is wrong with one `a.b.c=value`; nullopt when it was applied.
struct OverrideProblem {
  std::string message;
  // The YAML node that stood in the way, located in the scenario file when it came from there.
  YAML::Node where;
  std::string where_path;  // its key path, e.g. "history"
};

// The keys of `a.b.c`, or nothing when one is empty.
std::optional<std::vector<std::string>> split_path(const std::string& path) {
  std::vector<std::string> keys;
  std::stringstream stream(path);
  for (std::string key; std::getline(stream, key, '.');) {
    if (key.empty()) {
      return std::nullopt;
    }
    keys.push_back(key);
  }
  if (keys.empty() || path.back() == '.') {
    return std::nullopt;
  }
  return keys;
}

// Applies one `a.b.c=value`. A mapping the scenario leaves out (an optional section such as
// `history:`, or a key inside one) is created, as if the file had it empty.
std::optional<OverrideProblem> apply_override(YAML::Node root, const std::string& path,
                                              const YAML::Node& value) {
  std::optional<std::vector<std::string>> keys = split_path(path);
  if (!keys) {
    return OverrideProblem{.message = "empty key in the path"};
  }
  YAML::Node node = root;
  std::string node_path;
  for (std::size_t i = 0; i < keys->size(); ++i) {
    const std::string& key = (*keys)[i];
    bool last = i + 1 == keys->size();
    if (node.IsSequence()) {
      std::optional<YAML::Node> item = list_item(node, key);
      if (!item) {
        return OverrideProblem{
            .message = fmt::format("no list item '{}' (give an index or an item's name)", key)};
      }
      if (last) {
        return OverrideProblem{.message = "cannot replace a whole list item; set one of its keys"};
      }
      node.reset(*item);
      node_path += "." + key;
      continue;
    }
    if (!node.IsMap() && !node.IsNull()) {
      return OverrideProblem{
          .message = fmt::format("'{}' is a single value, not a mapping with keys",
                                 (*keys)[i > 0 ? i - 1 : 0]),
          .where = node,
          .where_path = node_path.empty() ? node_path : node_path.substr(1)};
    }
    if (last) {
      node[key] = value;
      return std::nullopt;
    }
    if (!node[key]) {
      node[key] = YAML::Node(YAML::NodeType::Map);
    }
    YAML::Node child = node[key];
    node.reset(child);
    node_path += "." + key;
  }
  return std::nullopt;
}

// Whether `target` is `tree` or inside it. A value an earlier --set gave carries the marks of
// its own one-line document, not the scenario file's, so it is told apart by identity.
bool holds(const YAML::Node& tree, const YAML::Node& target) {
  if (tree.is(target)) {
    return true;
  }
  if (tree.IsMap()) {
    for (const auto& entry : tree) {
      if (holds(entry.second, target)) {
        return true;
      }
    }
  } else if (tree.IsSequence()) {
    for (const auto& item : tree) {
      if (holds(item, target)) {
        return true;
      }
    }
  }
  return false;
}

}  // namespace

void apply_overrides(YAML::Node root, const std::vector<std::string>& assignments,
                     const std::string& file, Diagnostics& out) {
  std::vector<YAML::Node> given;  // the values applied so far
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
    std::optional<OverrideProblem> problem = apply_override(root, path, value);
    if (!problem) {
      given.push_back(value);
      continue;
    }
    bool from_file = problem->where.IsDefined() && problem->where.Mark().line >= 0 &&
                     std::none_of(given.begin(), given.end(), [&](const YAML::Node& earlier) {
                       return holds(earlier, problem->where);
                     });
    if (from_file) {
      // The scenario's own key stands in the way: point at it, as its other errors do.
      out.push_back(diagnostic_at(problem->where, file, problem->where_path,
                                  fmt::format("--set {}: {}", path, problem->message)));
    } else {
      fail(path, problem->message);
    }
  }
}

}  // namespace ernic
