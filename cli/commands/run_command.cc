// `ernicctl run`: scenario file -> plan -> executor -> history line and summary.
#include <fmt/format.h>

#include <iostream>

#include "base/interrupt.h"
#include "base/status.h"
#include "base/units.h"
#include "benchmarks/parser.h"
#include "commands/bringup/bringup_state.h"
#include "commands/commands.h"
#include "commands/run_outputs.h"
#include "plan/plan.h"
#include "plan/point_selection.h"
#include "run/attachment.h"
#include "run/command_runner.h"
#include "run/executor.h"
#include "scenario/scenario_loader.h"

namespace ernic {
std::optional<Scenario> load_or_report(const Platform& platform, const std::string& file,
                                       const std::vector<std::string>& sets) {
  LoadResult loaded = load_scenario(platform, file, sets);
  print_load_diagnostics(loaded, file, std::cerr);
  return std::move(loaded.scenario);
}

std::optional<RunResult> execute_plan(const Plan& plan, const Platform& platform,
                                      const RunOptions& options, bool quiet) {
  auto status = make_status(quiet);
  try {
    RealCommandRunner runner;
    Executor executor(plan, platform, runner, options, *status);
    RunResult result = executor.run();
    status->finish();
    return result;
  } catch (const PreflightError& e) {
    status->finish();
    std::cerr << e.what() << "\nnothing was started\n";
    return std::nullopt;
  }
}

// False when the walk itself failed (a component could not say what it would do).
bool print_dry_run(const Plan& plan, const Platform& platform, const RunOptions& options) {
  fmt::print("scenario {} ({} points)\n", plan.scenario->name, plan.points.size());
  auto quiet = make_status(/*quiet=*/true);
  DryRunCommandRunner runner;
  RunResult walked = Executor(plan, platform, runner, options, *quiet).run();
  if (!walked.fatal_error.empty()) {
    fmt::print("\nthe run would stop here: {}\n", walked.fatal_error);
  }
  if (plan.scenario->history.enabled) {
    fmt::print("\nhistory: {}\n", plan.scenario->history.path.string());
  }
  return walked.fatal_error.empty();
}

namespace {

struct RunFlags {
  std::string scenario;
  bool attach = false;
  StateFlags state;
  std::vector<std::string> sets;
  bool dry_run = false;
  std::string runs_dir = "runs";
  std::string keep = "never";
  std::string output = "text";
  PointSelection selection;
};

// An interrupted run stays 130 whatever it wrote; otherwise a record that is not in the history
// outranks the points' outcome, and a run file that could not be written fails the run.
int run_exit_status(RunStatus status, const RunOutputs& outputs) {
  if (status == RunStatus::kIncomplete) {
    return kExitInterrupted;
  }
  if (!outputs.record_saved) {
    return kExitRecordNotSaved;
  }
  return status == RunStatus::kPassed && outputs.all_files_written ? kExitOk : kExitFailed;
}

int run(const RunFlags& flags, const Platform& platform) {
  Interrupt::install();
  auto scenario = load_or_report(platform, flags.scenario, flags.sets);
  if (!scenario) {
    return kExitBadInput;
  }
  Plan plan = make_plan(*scenario, platform);
  try {
    select_points(plan, flags.selection);
  } catch (const SelectionError& e) {
    std::cerr << "ernicctl: " << e.what() << "\n";
    return kExitBadInput;
  }
  RunOptions options;
  std::optional<Attachment> attachment;
  if (flags.attach) {
    auto state = read_state(flags.state);
    if (!state) {
      std::cerr << fmt::format(
          "ernicctl: nothing to attach to ({} does not exist): `ernicctl up {}` first\n",
          state_file(flags.state).string(), flags.scenario);
      return kExitBadInput;
    }
    attachment = attachment_from_state(*state);
    options.attach = &*attachment;
  }
  options.runs_dir = flags.runs_dir;
  options.keep = flags.keep == "always"       ? KeepPolicy::kAlways
                 : flags.keep == "on-failure" ? KeepPolicy::kOnFailure
                                              : KeepPolicy::kNever;
  if (flags.dry_run) {
    return print_dry_run(plan, platform, options) ? kExitOk : kExitFailed;
  }
  std::optional<RunResult> executed = execute_plan(plan, platform, options, flags.output == "json");
  if (!executed) {
    return kExitBadInput;
  }
  RunResult& result = *executed;
  RunOutputs outputs = write_run_outputs(*scenario, plan, result, flags.output == "json");
  if (flags.attach) {
    note_attached_run(flags.state, result);
  }
  return run_exit_status(result.status, outputs);
}

}  // namespace

void register_run_command(CLI::App& app, CommandContext& context) {
  auto flags = std::make_shared<RunFlags>();
  CLI::App* cmd = app.add_subcommand("run",
                                     "Run a scenario: hosts, setup, every benchmark point; "
                                     "append the results to the history");
  cmd->add_option("scenario", flags->scenario, "Scenario YAML file")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--set", flags->sets,
                  "Override a key: key.path=value (YAML value; list items "
                  "by index or name), repeatable");
  cmd->add_flag("--attach", flags->attach,
                "Run against what `ernicctl up` left running: create and tear down nothing");
  add_state_option(cmd, flags->state);
  cmd->add_flag("--dry-run", flags->dry_run,
                "Print the expanded plan with every command; start nothing");
  cmd->add_option("--only", flags->selection.only,
                  "Run only the points whose id matches (`*`, `?` wildcards; brackets are "
                  "literal), repeatable");
  cmd->add_option("--skip", flags->selection.skip,
                  "Leave out the points whose id matches, repeatable");
  cmd->add_option("--repeat", flags->selection.repeat,
                  "Run every selected point N times (its repetitions)")
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--rerun-failed", flags->selection.rerun_failed,
                  "Run only the points that failed in this run directory")
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--runs-dir", flags->runs_dir, "Where run directories go")->capture_default_str();
  cmd->add_option("--keep", flags->keep, "Leave hosts up afterwards: never, on-failure, always")
      ->check(CLI::IsMember({"never", "on-failure", "always"}))
      ->capture_default_str();
  cmd->add_option("--output", flags->output, "Summary format: text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  cmd->callback([flags, &context] { context.exit_code = run(*flags, *context.platform); });
}

void register_validate_command(CLI::App& app, CommandContext& context) {
  auto file = std::make_shared<std::string>();
  auto sets = std::make_shared<std::vector<std::string>>();
  CLI::App* cmd = app.add_subcommand("validate",
                                     "Check a scenario without running anything "
                                     "(exit 0 when valid, 2 when not)");
  cmd->add_option("scenario", *file, "Scenario YAML file")->required();
  cmd->add_option("--set", *sets, "Override a key as `run --set` does");
  cmd->callback([file, sets, &context] {
    auto scenario = load_or_report(*context.platform, *file, *sets);
    if (!scenario) {
      context.exit_code = kExitBadInput;
      return;
    }
    Plan plan = make_plan(*scenario, *context.platform);
    fmt::print("{}: valid: {} hosts, {} setup steps, {} points\n", *file, scenario->hosts.size(),
               scenario->setup.size(), plan.points.size());
  });
}

void register_parse_command(CLI::App& app, CommandContext& context) {
  CLI::App* cmd = app.add_subcommand("parse",
                                     "Print what ernicctl reads from a tool's output, as JSON "
                                     "(exit 2 with the reason when it holds no result)");
  cmd->require_subcommand(1);
  for (const Benchmark* tool : context.platform->tools) {
    std::optional<OutputParser> parser = tool->output_parser();
    if (!parser) {
      continue;
    }
    auto file = std::make_shared<std::string>();
    CLI::App* sub = cmd->add_subcommand(parser->tool, parser->description);
    sub->add_option("file", *file, "Output file ('-' for standard input)")->required();
    auto parse = parser->parse;
    sub->callback([file, parse, &context] {
      std::stringstream text;
      if (*file == "-") {
        text << std::cin.rdbuf();
      } else {
        std::ifstream in(*file, std::ios::binary);
        if (!in) {
          std::cerr << fmt::format("cannot read {}: {}\n", *file, std::strerror(errno));
          context.exit_code = kExitBadInput;
          return;
        }
        text << in.rdbuf();
      }
      ParsedFile parsed = parse(text.str());
      if (!parsed.data.empty()) {
        std::cout << parsed.data.dump(2) << "\n";
      }
      if (!parsed.error.empty()) {
        std::cerr << fmt::format("{}: {}\n", *file, parsed.error);
        context.exit_code = kExitBadInput;
      }
    });
  }
}

}  // namespace ernic
