#include <fmt/format.h>

#include "setup/step_support.h"
#include "setup/steps.h"

namespace ernic {
namespace {

using setup::field;

const ObjectSchema& command_step_schema() {
  static const ObjectSchema schema = [] {
    FieldSchema run = field("run", ValueKind::kString, "Shell command to run (sh -c)");
    run.required = true;
    FieldSchema verify =
        field("verify", ValueKind::kString, "Shell command that must succeed afterwards");
    FieldSchema unless = field("unless", ValueKind::kString,
                               "Shell command; when it succeeds, `run` is skipped (idempotence)");
    FieldSchema timeout = field("timeout", ValueKind::kDuration, "Limit for each command");
    timeout.default_text = "5m";
    return ObjectSchema{"Runs a shell command, optionally guarded and verified",
                        {run, verify, unless, timeout}};
  }();
  return schema;
}

std::string detail(const CommandResult& result) {
  std::string text = setup::trim(result.err);
  return text.empty() ? "" : ": " + text;
}

std::string required_run(const Config& config) {
  std::string run = config.text("run", "");
  if (run.empty()) {
    throw SetupError("command: `run` is empty");
  }
  return run;
}

class CommandStep : public SetupStep {
 public:
  std::string_view kind() const override { return "command"; }
  std::string_view description() const override {
    return "Runs a shell command on the host; `unless` skips it when already done, `verify` "
           "checks the result";
  }
  const ObjectSchema& schema() const override { return command_step_schema(); }

  std::vector<std::string> describe(const Config& config, const Host& host) const override {
    std::vector<std::string> lines;
    std::string unless = config.text("unless", "");
    std::string verify = config.text("verify", "");
    lines.push_back(
        fmt::format("sh -c {}  # on {}{}", shell_quote(required_run(config)), host.name(),
                    unless.empty() ? "" : ", unless sh -c " + shell_quote(unless) + " succeeds"));
    if (!verify.empty()) {
      lines.push_back(fmt::format("verify: sh -c {}", shell_quote(verify)));
    }
    return lines;
  }

  void apply(const Config& config, Host& host, HostFacts& /*facts*/,
             OutputSink* log) const override {
    std::string run = required_run(config);
    std::string unless = config.text("unless", "");
    std::string verify = config.text("verify", "");
    auto timeout = config.duration("timeout", std::chrono::minutes(5));
    auto shell = [&](const std::string& command) {
      return host.run(CommandSpec{{"/bin/sh", "-c", command}, timeout, {}}, log);
    };
    if (!unless.empty() && shell(unless).ok()) {
      setup::note(log, fmt::format("skipped on {}: `{}` succeeded", host.name(), unless));
    } else {
      CommandResult result = shell(run);
      if (!result.ok()) {
        setup::fail(kind(), host,
                    fmt::format("`{}` failed ({}){}", run, result.describe(), detail(result)));
      }
    }
    if (!verify.empty()) {
      CommandResult result = shell(verify);
      if (!result.ok()) {
        setup::fail(kind(), host,
                    fmt::format("verification `{}` failed ({}){}", verify, result.describe(),
                                detail(result)));
      }
    }
  }
};

}  // namespace

const SetupStep& command_step() {
  static const CommandStep step;
  return step;
}

}  // namespace ernic
