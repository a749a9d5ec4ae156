#include "image/recipe.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>

#include "base/units.h"
#include "image/image_digest.h"

namespace ernic {
namespace {

[[noreturn]] void fail(const std::filesystem::path& file, const YAML::Node& node,
                       const std::string& message) {
  if (node.IsDefined() && node.Mark().line >= 0) {
    throw std::runtime_error(
        fmt::format("{}:{}: {}", file.string(), node.Mark().line + 1, message));
  }
  throw std::runtime_error(fmt::format("{}: {}", file.string(), message));
}

std::string scalar(const std::filesystem::path& file, const YAML::Node& node,
                   const std::string& key) {
  if (!node.IsScalar()) {
    fail(file, node, fmt::format("{}: expected a single value", key));
  }
  return node.Scalar();
}

std::vector<std::string> string_list(const std::filesystem::path& file, const YAML::Node& node,
                                     const std::string& key) {
  if (!node.IsSequence()) {
    fail(file, node, fmt::format("{}: expected a list", key));
  }
  std::vector<std::string> values;
  for (const auto& item : node) {
    values.push_back(scalar(file, item, key));
  }
  return values;
}

bool boolean(const std::filesystem::path& file, const YAML::Node& node, const std::string& key) {
  std::string text = scalar(file, node, key);
  if (text == "true" || text == "yes") {
    return true;
  }
  if (text == "false" || text == "no") {
    return false;
  }
  fail(file, node, fmt::format("{}: expected true or false, found '{}'", key, text));
}

void check_word(const std::filesystem::path& file, const YAML::Node& node, const std::string& key,
                const std::string& value, const std::regex& pattern) {
  if (!std::regex_match(value, pattern)) {
    fail(file, node, fmt::format("{}: '{}' is not allowed here", key, value));
  }
}

// A single value that must match `pattern`.
std::string checked_scalar(const std::filesystem::path& file, const YAML::Node& node,
                           const std::string& key, const std::regex& pattern) {
  std::string value = scalar(file, node, key);
  check_word(file, node, key, value, pattern);
  return value;
}

const std::regex kWord{"[A-Za-z0-9][A-Za-z0-9._+-]*"};
const std::regex kPath{"[A-Za-z0-9._/+-]+"};

// modules: {drop: [...], require: [...]}
void read_modules(const std::filesystem::path& file, const YAML::Node& value, ImageRecipe& recipe) {
  if (!value.IsMap()) {
    fail(file, value, "modules: expected {drop: [...], require: [...]}");
  }
  for (const auto& sub : value) {
    std::string sub_key = sub.first.as<std::string>();
    if (sub_key == "drop") {
      recipe.modules_drop = string_list(file, sub.second, "modules.drop");
      for (const auto& dir : recipe.modules_drop) {
        check_word(file, sub.second, "modules.drop", dir, kPath);
        if (dir.find("..") != std::string::npos) {
          fail(file, sub.second, "modules.drop: paths stay inside /lib/modules/VERSION");
        }
      }
    } else if (sub_key == "require") {
      recipe.modules_require = string_list(file, sub.second, "modules.require");
    } else {
      fail(file, sub.first, fmt::format("modules: unknown key '{}' (drop, require)", sub_key));
    }
  }
}

// user: NAME or {name, sudo, root_login}
void read_user(const std::filesystem::path& file, const YAML::Node& value, ImageRecipe& recipe) {
  if (value.IsScalar()) {
    recipe.user = value.Scalar();
  } else if (value.IsMap()) {
    for (const auto& sub : value) {
      std::string sub_key = sub.first.as<std::string>();
      if (sub_key == "name") {
        recipe.user = scalar(file, sub.second, "user.name");
      } else if (sub_key == "sudo") {
        recipe.user_sudo = boolean(file, sub.second, "user.sudo");
      } else if (sub_key == "root_login") {
        recipe.root_login = boolean(file, sub.second, "user.root_login");
      } else {
        fail(file, sub.first,
             fmt::format("user: unknown key '{}' (name, sudo, root_login)", sub_key));
      }
    }
  } else {
    fail(file, value, "user: expected a name or {name, sudo, root_login}");
  }
  static const std::regex kUser{"[a-z_][a-z0-9_-]{0,31}"};
  check_word(file, value, "user.name", recipe.user, kUser);
}

// One top-level key of the recipe (already known to be one of the allowed keys).
void read_key(const std::filesystem::path& file, const std::string& key, const YAML::Node& value,
              ImageRecipe& recipe) {
  if (key == "name") {
    recipe.name = checked_scalar(file, value, key, kWord);
  } else if (key == "suite") {
    recipe.suite = checked_scalar(file, value, key, kWord);
  } else if (key == "variant") {
    recipe.variant = checked_scalar(file, value, key, kWord);
  } else if (key == "mirror") {
    recipe.mirror = scalar(file, value, key);
    if (recipe.mirror.rfind("http://", 0) != 0 && recipe.mirror.rfind("https://", 0) != 0 &&
        recipe.mirror.rfind("file:/", 0) != 0) {
      fail(file, value, "mirror: expected an http://, https:// or file:/ URL");
    }
  } else if (key == "packages") {
    recipe.packages = string_list(file, value, key);
    for (const auto& package : recipe.packages) {
      check_word(file, value, key, package, kWord);
    }
  } else if (key == "kernel") {
    recipe.kernel = checked_scalar(file, value, key, kWord);
  } else if (key == "kernel_cmdline") {
    recipe.kernel_cmdline = scalar(file, value, key);
  } else if (key == "modules") {
    read_modules(file, value, recipe);
  } else if (key == "user") {
    read_user(file, value, recipe);
  } else if (key == "disk_size") {
    auto size = parse_size(scalar(file, value, key));
    if (!size || *size < (256ULL << 20)) {
      fail(file, value, "disk_size: expected a size of at least 256MiB, such as 2GiB");
    }
    recipe.disk_size = *size;
  } else if (key == "memlock") {
    static const std::regex kLimit{"unlimited|[0-9]+"};
    recipe.memlock = checked_scalar(file, value, key, kLimit);
  } else if (key == "hostname") {
    recipe.hostname = checked_scalar(file, value, key, kWord);
  }
}

// What the recipe must hold once every key is read.
void check_complete(const std::filesystem::path& file, const YAML::Node& root,
                    const ImageRecipe& recipe) {
  if (recipe.name.empty()) {
    fail(file, root, "name is required");
  }
  if (recipe.packages.empty()) {
    fail(file, root, "packages is required (at least openssh-server)");
  }
  auto has_package = [&](const std::string& package) {
    return std::find(recipe.packages.begin(), recipe.packages.end(), package) !=
           recipe.packages.end();
  };
  if (!has_package("openssh-server")) {
    fail(file, root["packages"],
         "packages: openssh-server is required (guests are reached over SSH)");
  }
  if (recipe.user_sudo && !has_package("sudo")) {
    fail(file, root["user"], "user.sudo: true needs the sudo package in packages");
  }
}

}  // namespace

std::string sha256_hex(const std::string& bytes) {
  Sha256Stream digest;
  digest.update(bytes.data(), bytes.size());
  return digest.hex();
}

ImageRecipe parse_image_recipe(const std::string& text, const std::filesystem::path& file) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& error) {
    throw std::runtime_error(
        fmt::format("{}:{}: {}", file.string(), error.mark.line + 1, error.msg));
  }
  if (!root.IsMap()) {
    fail(file, root, "a recipe is a mapping of keys such as name, suite, packages");
  }
  ImageRecipe recipe;
  recipe.file = file;
  recipe.text = text;
  static const std::set<std::string> kKeys{"name",     "suite",     "variant",        "mirror",
                                           "packages", "kernel",    "kernel_cmdline", "modules",
                                           "user",     "disk_size", "memlock",        "hostname"};
  for (const auto& entry : root) {
    std::string key = entry.first.as<std::string>();
    if (kKeys.count(key) == 0) {
      fail(file, entry.first, fmt::format("unknown key '{}'", key));
    }
    read_key(file, key, entry.second, recipe);
  }
  check_complete(file, root, recipe);
  return recipe;
}

ImageRecipe load_image_recipe(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) {
    throw std::runtime_error(fmt::format("{}: cannot read the recipe", file.string()));
  }
  std::stringstream text;
  text << in.rdbuf();
  return parse_image_recipe(text.str(), std::filesystem::absolute(file));
}

}  // namespace ernic
