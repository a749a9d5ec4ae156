#include <fmt/format.h>

#include "base/units.h"
#include "setup/step_support.h"
#include "setup/steps.h"

namespace ernic {
namespace {

using setup::field;

// Prints the names of the packages that are not installed.
constexpr const char* kMissing = R"sh(for p in "$@"; do
  s=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null)
  case "$s" in ii*) ;; *) echo "$p";; esac
done)sh";

const ObjectSchema& packages_step_schema() {
  static const ObjectSchema schema = [] {
    FieldSchema names = field("names", ValueKind::kList, "Debian packages to install");
    names.element = ValueKind::kString;
    names.required = true;
    FieldSchema lock = field("lock_timeout", ValueKind::kDuration,
                             "How long apt-get waits for another apt or dpkg to finish");
    lock.default_text = "2m";
    FieldSchema update = field("update", ValueKind::kBoolean,
                               "Run apt-get update first (only when something is missing)");
    update.default_text = "false";
    FieldSchema timeout = field("timeout", ValueKind::kDuration, "Limit for the whole install");
    timeout.default_text = "15m";
    return ObjectSchema{"Installs Debian packages with apt-get", {names, lock, update, timeout}};
  }();
  return schema;
}

std::vector<std::string> names_of(const Config& config) {
  std::vector<std::string> names = config.texts("names");
  if (names.empty()) {
    throw SetupError("packages: `names` lists no package");
  }
  return names;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    std::string line =
        setup::trim(text.substr(start, end == std::string::npos ? end : end - start));
    if (!line.empty()) {
      lines.push_back(line);
    }
    start = end == std::string::npos ? text.size() : end + 1;
  }
  return lines;
}

std::string joined(const std::vector<std::string>& words) {
  std::string text;
  for (const auto& word : words) {
    text += (text.empty() ? "" : " ") + word;
  }
  return text;
}

class PackagesStep : public SetupStep {
 public:
  std::string_view kind() const override { return "packages"; }
  std::string_view description() const override {
    return "Installs Debian packages (apt-get install, waiting up to lock_timeout for the dpkg "
           "lock); skips what is installed and checks with dpkg-query afterwards";
  }
  const ObjectSchema& schema() const override { return packages_step_schema(); }
  std::vector<Benchmark::Program> programs() const override {
    return {{"apt-get", "apt"}, {"dpkg-query", "dpkg"}};
  }

  std::vector<std::string> describe(const Config& config, const Host& host) const override {
    std::vector<std::string> lines;
    std::string lock =
        std::to_string(config.duration("lock_timeout", std::chrono::minutes(2)).count() / 1000);
    if (config.flag("update", false)) {
      lines.push_back(
          fmt::format("apt-get -o DPkg::Lock::Timeout={} update  # on {}", lock, host.name()));
    }
    lines.push_back(
        fmt::format("DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout={} install -y "
                    "--no-install-recommends {}  # on {}, only the packages not yet installed",
                    lock, joined(names_of(config)), host.name()));
    return lines;
  }

  void apply(const Config& config, Host& host, HostFacts& /*facts*/,
             OutputSink* log) const override {
    std::vector<std::string> names = names_of(config);
    auto lock = config.duration("lock_timeout", std::chrono::minutes(2));
    auto timeout = config.duration("timeout", std::chrono::minutes(15));
    if (!host.has_program("apt-get") || !host.has_program("dpkg-query")) {
      setup::fail(kind(), host, "needs apt-get and dpkg-query (a Debian or Ubuntu system)");
    }
    std::vector<std::string> missing = lines_of(
        setup::run_script_checked(host, kind(), "dpkg-query", kMissing, names, nullptr).out);
    if (missing.empty()) {
      setup::note(log, fmt::format("already installed on {}: {}", host.name(), joined(names)));
      return;
    }
    std::string lock_option = fmt::format("DPkg::Lock::Timeout={}", lock.count() / 1000);
    std::vector<std::pair<std::string, std::string>> env = {{"DEBIAN_FRONTEND", "noninteractive"}};
    if (config.flag("update", false)) {
      CommandResult updated =
          host.run(CommandSpec{{"apt-get", "-o", lock_option, "update"}, timeout, env}, log);
      if (!updated.ok()) {
        setup::fail(kind(), host,
                    fmt::format("apt-get update failed ({}): {}", updated.describe(),
                                setup::trim(updated.err)));
      }
    }
    CommandSpec install{
        {"apt-get", "-o", lock_option, "install", "-y", "--no-install-recommends"}, timeout, env};
    install.argv.insert(install.argv.end(), missing.begin(), missing.end());
    CommandResult installed = host.run(install, log);
    if (!installed.ok()) {
      setup::fail(kind(), host,
                  fmt::format("apt-get install {} failed ({}): {}", joined(missing),
                              installed.describe(), setup::trim(installed.err)));
    }
    std::vector<std::string> still_missing = lines_of(
        setup::run_script_checked(host, kind(), "dpkg-query", kMissing, names, nullptr).out);
    if (!still_missing.empty()) {
      setup::fail(kind(), host, "still not installed after apt-get: " + joined(still_missing));
    }
    setup::note(log, fmt::format("installed on {}: {}", host.name(), joined(missing)));
  }
};

}  // namespace

const SetupStep& packages_step() {
  static const PackagesStep step;
  return step;
}

}  // namespace ernic
