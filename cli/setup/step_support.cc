#include "setup/step_support.h"

#include <fmt/format.h>

#include "common/units.h"

namespace ernic::setup {

FieldSchema field(std::string name, ValueKind kind, std::string description) {
  FieldSchema result;
  result.name = std::move(name);
  result.kind = kind;
  result.description = std::move(description);
  return result;
}

std::string text(const YAML::Node& config, const std::string& key, const std::string& fallback) {
  if (!config || !config.IsMap() || !config[key] || config[key].IsNull()) {
    return fallback;
  }
  if (!config[key].IsScalar()) {
    throw SetupError(fmt::format("setup key {}: expected a single value", key));
  }
  return config[key].Scalar();
}

std::vector<std::string> texts(const YAML::Node& config, const std::string& key) {
  std::vector<std::string> values;
  if (!config || !config.IsMap() || !config[key]) {
    return values;
  }
  const YAML::Node node = config[key];
  if (node.IsScalar()) {
    values.push_back(node.Scalar());
    return values;
  }
  if (!node.IsSequence()) {
    throw SetupError(fmt::format("setup key {}: expected a list", key));
  }
  for (const auto& item : node) {
    if (!item.IsScalar()) {
      throw SetupError(fmt::format("setup key {}: expected a list of values", key));
    }
    values.push_back(item.Scalar());
  }
  return values;
}

std::chrono::milliseconds duration(const YAML::Node& config, const std::string& key,
                                   const std::string& fallback) {
  std::string value = text(config, key, fallback);
  auto parsed = parse_duration(value);
  if (!parsed || parsed->count() < 0) {
    throw SetupError(
        fmt::format("setup key {}: expected a duration such as 30s, found '{}'", key, value));
  }
  return std::chrono::duration_cast<std::chrono::milliseconds>(*parsed);
}

bool flag(const YAML::Node& config, const std::string& key, bool fallback) {
  std::string value = text(config, key, fallback ? "true" : "false");
  if (value == "true" || value == "yes" || value == "on") {
    return true;
  }
  if (value == "false" || value == "no" || value == "off") {
    return false;
  }
  throw SetupError(fmt::format("setup key {}: expected true or false, found '{}'", key, value));
}

std::string sysfs_root(const YAML::Node& config, const HostFacts& facts) {
  std::string fallback = "/sys";
  if (auto found = facts.find("sysfs_root"); found != facts.end() && !found->second.empty()) {
    fallback = found->second;
  }
  std::string root = text(config, "sysfs_root", fallback);
  while (root.size() > 1 && root.back() == '/') {
    root.pop_back();
  }
  return root;
}

CommandResult run_script(Host& host, const std::string& script,
                         const std::vector<std::string>& args, OutputSink* log,
                         std::chrono::milliseconds timeout) {
  CommandSpec spec;
  spec.argv = {"/bin/sh", "-c", script, "ernic"};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.timeout = timeout;
  return host.run(spec, log);
}

CommandResult run_script_checked(Host& host, std::string_view step, const std::string& what,
                                 const std::string& script, const std::vector<std::string>& args,
                                 OutputSink* log, std::chrono::milliseconds timeout) {
  CommandResult result = run_script(host, script, args, log, timeout);
  if (!result.ok()) {
    // The message ends with the last lines said; all of it is in the step log.
    std::string detail = trim(result.err.empty() ? result.out : result.err);
    constexpr int kLinesKept = 5;
    std::size_t cut = detail.size();
    for (int kept = 0; kept < kLinesKept && cut != std::string::npos && cut > 0; ++kept) {
      cut = detail.rfind('\n', cut - 1);
    }
    if (cut != std::string::npos && cut > 0) {
      detail = "...\n" + detail.substr(cut + 1);
    }
    fail(step, host,
         fmt::format("{} failed ({}){}", what, result.describe(),
                     detail.empty() ? std::string() : ": " + detail));
  }
  return result;
}

void note(OutputSink* log, const std::string& message) {
  if (log != nullptr) {
    log->on_output(OutputStream::kStdout, "[ernicctl] " + message + "\n");
  }
}

std::string trim(std::string value) {
  const char* space = " \t\r\n";
  value.erase(0, value.find_first_not_of(space));
  std::size_t last = value.find_last_not_of(space);
  value.erase(last == std::string::npos ? 0 : last + 1);
  return value;
}

void fail(std::string_view step, const Host& host, const std::string& message) {
  throw SetupError(fmt::format("{} on {}: {}", step, host.name(), message));
}

}  // namespace ernic::setup
