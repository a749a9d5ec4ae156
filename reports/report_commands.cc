#include "report_commands.h"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <memory>

#include "compare.h"
#include "history_tools.h"
#include "run_index.h"
#include "site.h"
#include "synthetic_history.h"

namespace ernic::reports {
namespace {

namespace fs = std::filesystem;

constexpr const char* kDefaultHistory = "perf/history.jsonl";

void print_warnings(const std::vector<std::string>& warnings) {
  for (const auto& warning : warnings) {
    fmt::print(stderr, "warning: {}\n", warning);
  }
}

struct ReportArgs {
  std::vector<std::string> histories;
  std::string out;
  SiteOptions site;
};

struct CompareArgs {
  std::string history = kDefaultHistory;
  CompareOptions options;
  bool gate = false;
};

struct HistoryArgs {
  std::size_t max_runs = 60;
  std::string file = kDefaultHistory;
  std::string record;
  std::string out;
  std::vector<std::string> inputs;
  SyntheticOptions synthetic;
};

void add_report(CLI::App& app, CommandContext& context) {
  auto args = std::make_shared<ReportArgs>();
  auto* cmd = app.add_subcommand(
      "report", "Render histories into a static site (index.html, inline SVG charts) and badges");
  cmd->add_option("HISTORY", args->histories, "History files (JSONL) of ernicctl or rocm-ernic")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--out", args->out, "Output directory")->required();
  cmd->add_option("--chart-runs", args->site.chart_runs,
                  "Newest runs per runner class on the charts (0: all)")
      ->capture_default_str();
  cmd->add_option("--title", args->site.title, "Page title")->capture_default_str();
  cmd->add_option("--badge-runner", args->site.badge_runner,
                  "Runner class the badges describe (default: the newest run's)");
  cmd->callback([args, &context] {
    try {
      std::vector<fs::path> paths(args->histories.begin(), args->histories.end());
      auto index = index_histories(paths);
      auto summary = write_site(index, args->site, args->out);
      print_warnings(summary.warnings);
      fmt::print(
          "wrote {} ({} runs, {} runner classes, {} charts) and badge-rdma.json, "
          "badge-tcp.json, badge-nvmeof.json, badge-s3.json\n",
          summary.page.string(), summary.runs, summary.runner_classes, summary.charts);
    } catch (const std::exception& e) {
      fmt::print(stderr, "ernicctl report: {}\n", e.what());
      context.exit_code = kExitBadInput;
    }
  });
}

void add_compare(CLI::App& app, CommandContext& context) {
  auto args = std::make_shared<CompareArgs>();
  auto* cmd = app.add_subcommand(
      "compare",
      "Compare the newest (or a named) run with earlier runs of its runner class and scenario");
  cmd->add_option("HISTORY", args->history, "History file")->capture_default_str();
  cmd->add_option("--run", args->options.run_id, "Run id to judge (default: the newest)");
  cmd->add_option("--baseline", args->options.baseline_ids,
                  "Run ids to compare against (default: a window of earlier runs)");
  cmd->add_option("--window", args->options.window, "Earlier runs in the baseline window")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--threshold", args->options.threshold_percent,
                  "Change in percent that counts as a regression")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--gate", args->gate, "Exit 1 when a metric regressed");
  cmd->callback([args, &context] {
    try {
      if (!fs::exists(args->history)) {
        throw CompareInputError(fmt::format("history {} does not exist", args->history));
      }
      auto index = index_histories({args->history});
      print_warnings(index.warnings);
      auto comparison = compare_runs(index, args->options);
      fmt::print("{}", render_comparison(comparison, args->options));
      if (args->gate && comparison.has_regression()) {
        context.exit_code = kExitFailed;
      }
    } catch (const std::exception& e) {
      fmt::print(stderr, "ernicctl compare: {}\n", e.what());
      context.exit_code = kExitBadInput;
    }
  });
}

void add_history(CLI::App& app, CommandContext& context) {
  auto args = std::make_shared<HistoryArgs>();
  auto* history = app.add_subcommand("history", "Maintain history files");
  history->require_subcommand(1);

  auto* trim = history->add_subcommand("trim", "Keep the newest runs of each runner class");
  trim->add_option("--max-runs", args->max_runs, "Runs to keep per runner class")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  trim->add_option("FILE", args->file, "History file")->required();
  trim->callback([args, &context] {
    try {
      auto result = trim_history(args->file, args->max_runs);
      fmt::print("{}: kept {} runs, removed {}, kept {} unreadable line(s) verbatim\n", args->file,
                 result.kept, result.removed, result.corrupt_kept);
    } catch (const std::exception& e) {
      fmt::print(stderr, "ernicctl history trim: {}\n", e.what());
      context.exit_code = kExitBadInput;
    }
  });

  auto* append = history->add_subcommand(
      "append",
      "Add a run's saved record (RUN_DIR/record.json) to a history: for a run that could not "
      "append it (exit status 3)");
  append->add_option("RECORD", args->record, "The record file")->required();
  append->add_option("--history", args->file, "History file")->capture_default_str();
  append->callback([args, &context] {
    try {
      auto result = append_saved_record(args->record, args->file);
      if (!result.repair.empty()) {
        fmt::print(stderr, "warning: {}\n", result.repair);
      }
      fmt::print("{}: {}\n", args->file,
                 result.already_present
                     ? fmt::format("already holds {}; nothing appended", args->record)
                     : fmt::format("appended {}", args->record));
    } catch (const std::exception& e) {
      fmt::print(stderr, "ernicctl history append: {}\n", e.what());
      context.exit_code = kExitBadInput;
    }
  });

  auto* merge = history->add_subcommand("merge", "Merge histories into OUT, one line per run_id");
  merge->add_option("OUT", args->out, "History written (its own lines are kept)")->required();
  merge->add_option("IN", args->inputs, "Histories to merge in")->required();
  merge->callback([args, &context] {
    try {
      std::vector<fs::path> inputs(args->inputs.begin(), args->inputs.end());
      auto result = merge_histories(args->out, inputs);
      print_warnings(result.warnings);
      fmt::print("{}: {} lines written, {} duplicate run(s) dropped, {} unreadable line(s) kept\n",
                 args->out, result.written, result.duplicates, result.corrupt_kept);
    } catch (const std::exception& e) {
      fmt::print(stderr, "ernicctl history merge: {}\n", e.what());
      context.exit_code = kExitBadInput;
    }
  });

  auto* validate = history->add_subcommand("validate", "Check every line of a history file");
  validate->add_option("FILE", args->file, "History file")->required();
  validate->callback([args, &context] {
    try {
      auto report = validate_history(args->file);
      for (const auto& note : report.notes) {
        fmt::print(stderr, "note: {}\n", note);
      }
      for (const auto& problem : report.problems) {
        fmt::print(stderr, "{}\n", problem);
      }
      if (report.ok()) {
        fmt::print("{}: {} records, valid\n", args->file, report.records);
      } else {
        fmt::print(stderr, "{}: {} problem(s) in {} records\n", args->file, report.problems.size(),
                   report.records);
        context.exit_code = kExitBadInput;
      }
    } catch (const std::exception& e) {
      fmt::print(stderr, "ernicctl history validate: {}\n", e.what());
      context.exit_code = kExitBadInput;
    }
  });

  auto* synthesize = history->add_subcommand(
      "synthesize", "Write a made-up history (for benchmarks and demos; not real measurements)");
  synthesize->add_option("OUT", args->out, "History file written (replaced)")->required();
  synthesize->add_option("--records", args->synthetic.records, "Records to write")
      ->capture_default_str();
  synthesize->add_option("--seed", args->synthetic.seed, "Random seed")->capture_default_str();
  synthesize->add_option("--repetitions", args->synthetic.repetitions, "Samples per point")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  synthesize->callback([args, &context] {
    try {
      write_synthetic_history(args->out, args->synthetic);
      fmt::print("{}: {} synthetic records\n", args->out, args->synthetic.records);
    } catch (const std::exception& e) {
      fmt::print(stderr, "ernicctl history synthesize: {}\n", e.what());
      context.exit_code = kExitBadInput;
    }
  });
}

}  // namespace

void register_commands(CLI::App& app, CommandContext& context) {
  add_report(app, context);
  add_compare(app, context);
  add_history(app, context);
}

}  // namespace ernic::reports
