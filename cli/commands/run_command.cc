// `ernicctl run`: scenario file -> plan -> executor -> history line and summary.
#include <fmt/format.h>

#include <iostream>

#include "benchmarks/parser.h"
#include "commands/commands.h"
#include "commands/dry_run_host.h"
#include "common/interrupt.h"
#include "common/units.h"
#include "emulators/emulator_kind.h"
#include "history/history_file.h"
#include "history/record.h"
#include "plan/plan.h"
#include "run/executor.h"
#include "run_summary.h"
#include "scenario/scenario_loader.h"
#include "setup/setup_step.h"

namespace ernic {
std::optional<Scenario> load_or_report(const std::string& file,
                                       const std::vector<std::string>& sets) {
  LoadResult loaded = load_scenario(file, sets);
  for (const auto& diagnostic : loaded.diagnostics) {
    std::cerr << diagnostic.format() << "\n";
  }
  if (!loaded.diagnostics.empty()) {
    std::cerr << fmt::format("{}: {} error{}; nothing was started\n", file,
                             loaded.diagnostics.size(), loaded.diagnostics.size() == 1 ? "" : "s");
  }
  return std::move(loaded.scenario);
}

std::optional<RunResult> execute_plan(const Plan& plan, const RunOptions& options, bool quiet) {
  auto status = make_status(quiet);
  try {
    Executor executor(plan, options, *status);
    RunResult result = executor.run();
    status->finish();
    return result;
  } catch (const PreflightError& e) {
    status->finish();
    std::cerr << e.what() << "\nnothing was started\n";
    return std::nullopt;
  }
}

namespace {

struct RunFlags {
  std::string scenario;
  std::vector<std::string> sets;
  bool dry_run = false;
  std::string runs_dir = "runs";
  std::string keep = "never";
  std::string output = "text";
};

void print_dry_run(const Scenario& scenario, const Plan& plan) {
  std::map<std::string, std::unique_ptr<DryRunHost>> hosts;
  fmt::print("scenario {} ({} points)\n", scenario.name, plan.points.size());
  // In the order the run does things: instances first, since guests attach to them.
  if (EmulatorKind* kind = find_emulator_kind(scenario.emulator.kind);
      kind != nullptr && kind->instance_count(scenario.emulator.config) > 0) {
    fmt::print("\nemulator ({}):\n", scenario.emulator.kind);
    for (const auto& line : kind->describe(scenario.emulator.config)) {
      fmt::print("    $ {}\n", line);
    }
  }
  fmt::print("\nhosts:\n");
  std::map<std::string, std::vector<HostSpec>> by_provider;
  for (const auto& spec : scenario.hosts) {
    by_provider[spec.provider].push_back(spec);
  }
  for (const auto& [provider_name, specs] : by_provider) {
    HostProvider* provider = find_host_provider(provider_name);
    auto addresses = provider->planned_addresses(specs, scenario.root);
    for (std::size_t i = 0; i < specs.size(); ++i) {
      fmt::print("  {} ({}, {})\n", specs[i].name, provider_name,
                 addresses[i].empty() ? "address known once up" : addresses[i]);
      hosts[specs[i].name] = std::make_unique<DryRunHost>(specs[i].name, addresses[i]);
    }
    ProviderContext context{.run_dir = "runs/DRY-RUN",
                            .run_token = "XXXXXX",
                            .scenario = scenario.root,
                            .cleanup = nullptr,
                            .status = nullptr};
    for (const auto& line : provider->describe(specs, context)) {
      fmt::print("    $ {}\n", line);
    }
  }
  // What setup will have found, as placeholders in the benchmark command lines.
  std::map<std::string, HostFacts> planned_facts;
  if (!scenario.setup.empty()) {
    fmt::print("\nsetup:\n");
    for (const auto& entry : scenario.setup) {
      const SetupStep* step = find_setup_step(entry.step);
      for (const auto& host_name : entry.hosts) {
        for (const auto& fact : step->recorded_facts()) {
          planned_facts[host_name][fact] = "<" + fact + ">";
        }
        fmt::print("  {} on {}\n", entry.step, host_name);
        for (const auto& line : step->describe(entry.config, *hosts[host_name])) {
          fmt::print("    $ {}\n", line);
        }
      }
    }
  }
  fmt::print("\npoints:\n");
  for (const auto& point : plan.points) {
    PointContext context;
    context.id = point.id;
    context.params = point.params;
    context.server = point.entry->server.empty() ? nullptr : hosts[point.entry->server].get();
    context.client = hosts[point.entry->client].get();
    context.server_facts = planned_facts[point.entry->server];
    context.client_facts = planned_facts[point.entry->client];
    context.port = point.port;
    context.timeout = point.entry->timeout;
    PointCommands commands = point.tool->commands(context);
    fmt::print("  [{}/{}] {}  x{}, timeout {}\n", point.index + 1, plan.points.size(), point.id,
               point.entry->repetitions, format_duration_short(point.entry->timeout));
    if (commands.server) {
      fmt::print("    server on {}: {}\n", point.entry->server, commands.server->spec.display());
    }
    fmt::print("    client on {}: {}\n", point.entry->client, commands.client.display());
  }
  if (scenario.history.enabled) {
    fmt::print("\nhistory: {}\n", scenario.history.path.string());
  }
}

nlohmann::json summary_json(const nlohmann::json& record, const std::string& history) {
  nlohmann::json points = nlohmann::json::array();
  for (const auto& point : record["ernicctl"]["points"]) {
    nlohmann::json medians = nlohmann::json::object();
    for (const auto& [name, stats] : point["summary"].items()) {
      medians[name] = stats["median"];
    }
    points.push_back({{"id", point["id"]},
                      {"status", point["status"]},
                      {"reason", point["reason"]},
                      {"samples", point["samples"].size()},
                      {"duration_s", point["duration_s"]},
                      {"median", medians}});
  }
  return {{"status", record["ernicctl"]["status"]},
          {"error", record["ernicctl"]["error"]},
          {"run_dir", record["ernicctl"]["run_dir"]},
          {"history", history.empty() ? nlohmann::json(nullptr) : nlohmann::json(history)},
          {"series", record["series"]},
          {"badges", record["badges"]},
          {"points", points}};
}

void print_summary_table(const nlohmann::json& summary, const Plan& plan) {
  std::size_t width = 5;
  for (const auto& point : summary["points"]) {
    width = std::max(width, point["id"].get<std::string>().size());
  }
  fmt::print("\n{:<{}}  {:<7}  {:>4}  {}\n", "point", width, "status", "reps", "result");
  for (std::size_t i = 0; i < summary["points"].size(); ++i) {
    const auto& point = summary["points"][i];
    std::string result;
    if (point["status"] == "passed") {
      const Benchmark& tool = *plan.points[i].tool;
      std::string headline = tool.headline_metric(plan.points[i].params);
      for (const auto& metric : tool.metrics()) {
        if (metric.name == headline && point["median"].contains(metric.name)) {
          result = fmt::format("{} {:.4g} {}", metric.name,
                               point["median"][metric.name].get<double>(), metric.unit);
        }
      }
    } else if (!point["reason"].is_null()) {
      result = point["reason"].get<std::string>();
    }
    fmt::print("{:<{}}  {:<7}  {:>4}  {}\n", point["id"].get<std::string>(), width,
               point["status"].get<std::string>(), point["samples"].get<std::size_t>(), result);
  }
  std::size_t passed = 0;
  for (const auto& point : summary["points"]) {
    passed += point["status"] == "passed" ? 1 : 0;
  }
  fmt::print("\n{}: {} of {} points passed", summary["status"].get<std::string>(), passed,
             summary["points"].size());
  if (!summary["error"].is_null()) {
    fmt::print(" ({})", summary["error"].get<std::string>());
  }
  fmt::print("\nrun directory: {}\n", summary["run_dir"].get<std::string>());
  if (!summary["history"].is_null()) {
    fmt::print("history: {}\n", summary["history"].get<std::string>());
  }
}

int run(const RunFlags& flags) {
  Interrupt::install();
  auto scenario = load_or_report(flags.scenario, flags.sets);
  if (!scenario) {
    return kExitBadInput;
  }
  Plan plan = make_plan(*scenario);
  if (flags.dry_run) {
    print_dry_run(*scenario, plan);
    return kExitOk;
  }
  RunOptions options;
  options.runs_dir = flags.runs_dir;
  options.keep = flags.keep == "always"       ? KeepPolicy::kAlways
                 : flags.keep == "on-failure" ? KeepPolicy::kOnFailure
                                              : KeepPolicy::kNever;
  std::optional<RunResult> executed = execute_plan(plan, options, flags.output == "json");
  if (!executed) {
    return kExitBadInput;
  }
  RunResult& result = *executed;
  nlohmann::json record = build_history_record(*scenario, result);
  {
    std::ofstream out(result.run_dir / "record.json");
    out << record.dump(2) << "\n";
  }
  {
    std::ofstream(result.run_dir / "summary.md") << reports::render_markdown_summary(record);
    std::ofstream(result.run_dir / "junit.xml") << reports::render_junit(record);
  }
  if (const char* step_summary = std::getenv("GITHUB_STEP_SUMMARY");
      step_summary && *step_summary) {
    std::ofstream(step_summary, std::ios::app) << reports::render_markdown_summary(record) << "\n";
  }
  std::string history_path;
  if (scenario->history.enabled) {
    try {
      append_history_record(scenario->history.path, record);
      history_path = scenario->history.path.string();
    } catch (const std::exception& e) {
      std::cerr << "error: the result was not added to the history: " << e.what() << "\n";
    }
  }
  nlohmann::json summary = summary_json(record, history_path);
  {
    std::ofstream out(result.run_dir / "summary.json");
    out << summary.dump(2) << "\n";
  }
  if (flags.output == "json") {
    std::cout << summary.dump(2) << std::endl;
  } else {
    print_summary_table(summary, plan);
  }
  switch (result.status) {
    case RunStatus::kPassed:
      return kExitOk;
    case RunStatus::kIncomplete:
      return kExitInterrupted;
    case RunStatus::kFailed:
      return kExitFailed;
  }
  return kExitFailed;
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
  cmd->add_flag("--dry-run", flags->dry_run,
                "Print the expanded plan with every command; start nothing");
  cmd->add_option("--runs-dir", flags->runs_dir, "Where run directories go")->capture_default_str();
  cmd->add_option("--keep", flags->keep, "Leave hosts up afterwards: never, on-failure, always")
      ->check(CLI::IsMember({"never", "on-failure", "always"}))
      ->capture_default_str();
  cmd->add_option("--output", flags->output, "Summary format: text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  cmd->callback([flags, &context] { context.exit_code = run(*flags); });
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
    auto scenario = load_or_report(*file, *sets);
    if (!scenario) {
      context.exit_code = kExitBadInput;
      return;
    }
    Plan plan = make_plan(*scenario);
    fmt::print("{}: valid: {} hosts, {} setup steps, {} points\n", *file, scenario->hosts.size(),
               scenario->setup.size(), plan.points.size());
  });
}

void register_parse_command(CLI::App& app, CommandContext& context) {
  CLI::App* cmd = app.add_subcommand("parse",
                                     "Print what ernicctl reads from a tool's output, as JSON "
                                     "(exit 2 with the reason when it holds no result)");
  cmd->require_subcommand(1);
  for (const auto& parser : all_parsers()) {
    auto file = std::make_shared<std::string>();
    CLI::App* sub = cmd->add_subcommand(parser.tool, parser.description);
    sub->add_option("file", *file, "Output file ('-' for standard input)")->required();
    auto parse = parser.parse;
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
