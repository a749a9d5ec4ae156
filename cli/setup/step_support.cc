#include "setup/step_support.h"

#include <fmt/format.h>

namespace ernic::setup {

FieldSchema field(std::string name, ValueKind kind, std::string description) {
  FieldSchema result;
  result.name = std::move(name);
  result.kind = kind;
  result.description = std::move(description);
  return result;
}

std::string sysfs_root(const Config& config, const HostFacts& facts) {
  std::string fallback = "/sys";
  if (auto found = facts.find("sysfs_root"); found != facts.end() && !found->second.empty()) {
    fallback = found->second;
  }
  std::string root = config.text("sysfs_root", fallback);
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
