#include <fmt/format.h>

#include <sstream>

#include "setup/step_support.h"
#include "setup/steps.h"

namespace ernic {
namespace {

using setup::field;

// Through /proc/sys rather than sysctl(8), which minimal guests may lack.
constexpr const char* kRead = R"sh(cat "/proc/sys/$1")sh";
constexpr const char* kWrite = R"sh(printf '%s\n' "$2" > "/proc/sys/$1")sh";

const ObjectSchema& sysctl_step_schema() {
  static const ObjectSchema schema = [] {
    FieldSchema values = field("values", ValueKind::kStringMap,
                               "Kernel parameters set to exactly these values, e.g. "
                               "net.ipv4.ip_forward: 1");
    FieldSchema at_least = field("at_least", ValueKind::kStringMap,
                                 "Kernel parameters raised to at least these values and never "
                                 "lowered, e.g. net.core.rmem_max: 16777216");
    return ObjectSchema{"Sets kernel parameters (/proc/sys) and reads them back",
                        {values, at_least}};
  }();
  return schema;
}

// "4096\t87380   6291456\n" -> "4096 87380 6291456"
std::string normalized(const std::string& value) {
  std::istringstream words(value);
  std::string word, text;
  while (words >> word) {
    text += (text.empty() ? "" : " ") + word;
  }
  return text;
}

std::vector<std::pair<std::string, std::string>> entries_of(const Config& config,
                                                            const std::string& key) {
  std::vector<std::pair<std::string, std::string>> entries;
  for (const auto& [name, value] : config.string_map(key)) {
    bool safe = !name.empty() && name.find("..") == std::string::npos && name[0] != '/' &&
                name.find_first_not_of(
                    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                    "0123456789_-./") == std::string::npos;
    if (!safe) {
      throw SetupError("sysctl: '" + name + "' is not a kernel parameter name");
    }
    entries.emplace_back(name, normalized(value));
  }
  return entries;
}

std::string path_of(std::string name) {
  for (char& c : name) {
    c = c == '.' ? '/' : c;
  }
  return name;
}

// Field-wise maximum of two whitespace-separated integer lists; nullopt when not numeric.
std::optional<std::string> raised(const std::string& current, const std::string& minimum) {
  std::istringstream have(current), want(minimum);
  std::string a, b, text;
  while (want >> b) {
    if (!(have >> a)) {
      return std::nullopt;
    }
    try {
      long long x = std::stoll(a), y = std::stoll(b);
      text += (text.empty() ? "" : " ") + std::to_string(std::max(x, y));
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  while (have >> a) {
    text += " " + a;
  }
  return text;
}

class SysctlStep : public SetupStep {
 public:
  std::string_view kind() const override { return "sysctl"; }
  std::string_view description() const override {
    return "Sets kernel parameters (exact values or minimums) and verifies them by reading "
           "them back";
  }
  const ObjectSchema& schema() const override { return sysctl_step_schema(); }

  std::vector<std::string> describe(const Config& config, const Host& host) const override {
    std::vector<std::string> lines;
    for (const auto& [name, value] : entries_of(config, "values")) {
      lines.push_back(fmt::format("echo '{}' > /proc/sys/{}  # sysctl {} on {}", value,
                                  path_of(name), name, host.name()));
    }
    for (const auto& [name, value] : entries_of(config, "at_least")) {
      lines.push_back(fmt::format("echo '{}' > /proc/sys/{}  # sysctl {} on {}, only if lower",
                                  value, path_of(name), name, host.name()));
    }
    return lines;
  }

  void apply(const Config& config, Host& host, HostFacts& facts, OutputSink* log) const override {
    auto exact = entries_of(config, "values");
    auto minimums = entries_of(config, "at_least");
    if (exact.empty() && minimums.empty()) {
      throw SetupError("sysctl: give `values` or `at_least`");
    }
    for (const auto& entry : exact) {
      const std::string& value = entry.second;
      set(
          host, entry.first, [&](const std::string&) { return value; }, facts, log);
    }
    for (const auto& entry : minimums) {
      const std::string& name = entry.first;
      const std::string& minimum = entry.second;
      auto target_of = [&](const std::string& current) {
        auto target = raised(current, minimum);
        if (!target) {
          setup::fail(kind(), host,
                      fmt::format("{} is '{}' and at_least '{}': not comparable numbers", name,
                                  current, minimum));
        }
        return *target;
      };
      set(host, name, target_of, facts, log);
    }
  }

 private:
  template <typename Target>
  void set(Host& host, const std::string& name, Target target_of, HostFacts& facts,
           OutputSink* log) const {
    std::string path = path_of(name);
    CommandResult read = setup::run_script(host, kRead, {path}, nullptr);
    if (!read.ok()) {
      setup::fail(
          kind(), host,
          fmt::format("kernel parameter {} does not exist ({})", name, setup::trim(read.err)));
    }
    std::string current = normalized(read.out);
    std::string target = target_of(current);
    if (current == target) {
      setup::note(log, fmt::format("{} is already {} on {}", name, target, host.name()));
    } else {
      setup::run_script_checked(host, kind(), fmt::format("setting {} to {}", name, target), kWrite,
                                {path, target}, log);
      std::string now = normalized(setup::run_script(host, kRead, {path}, nullptr).out);
      if (now != target) {
        setup::fail(kind(), host,
                    fmt::format("{} reads '{}' after setting it to '{}'", name, now, target));
      }
      setup::note(log, fmt::format("{}: {} -> {} on {}", name, current, target, host.name()));
    }
    facts["sysctl." + name] = target;
  }
};

}  // namespace

const SetupStep& sysctl_step() {
  static const SysctlStep step;
  return step;
}

}  // namespace ernic
