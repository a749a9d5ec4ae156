// What `ernicctl run` writes once the executor is done: the record, the run's files (rocm-ernic's
// perf-csv/ and junit/ included), the history line and the summary.
#include "commands/run_outputs.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>

#include "base/durable_file.h"
#include "history/history_file.h"
#include "perf_csv.h"
#include "run/fairness.h"
#include "run/record.h"
#include "run_summary.h"

namespace ernic {
namespace {

std::string env_text(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

// rocm-ernic's summary.json keys (meta, functional, perf, perf_csv_files, regressions), computed
// from the same rows as perf-csv/, beside ernicctl's own (badges, error, history, points,
// run_dir, series, status).
nlohmann::json summary_json(const HistoryRecord& record, const std::string& history,
                            const std::array<reports::PerfTable, 3>& tables,
                            std::size_t csv_files) {
  const ErnicctlPart& part = *record.ernicctl;
  nlohmann::json points = nlohmann::json::array();
  for (const auto& point : part.points) {
    nlohmann::json medians = nlohmann::json::object();
    for (const auto& [name, stats] : point.summary) {
      medians[name] = stats.median;
    }
    points.push_back({{"id", point.id},
                      {"status", point.status},
                      {"reason", point.reason ? nlohmann::json(*point.reason) : nullptr},
                      {"samples", point.samples.size()},
                      {"duration_s", point.duration_s.value_or(0)},
                      {"rung", rung_number(point_rung(point))},
                      {"median", medians}});
  }
  reports::PointCounts counts = reports::count_points(record);
  std::string ref = env_text("ERNIC_REF");
  if (ref.empty()) {
    ref = env_text("GITHUB_REF");
  }
  nlohmann::json record_json = record;
  return {{"meta",
           {{"run_id", record.run_id},
            {"sha", record.sha},
            {"ref", ref},
            {"node", record.node},
            {"accel", part.accelerator},
            {"generated", record.generated}}},
          {"functional",
           {{"total", counts.tests()},
            {"passed", counts.passed},
            {"failed", counts.failed_tests()},
            {"skipped", counts.skipped}}},
          {"perf", reports::perf_summary(tables)},
          {"perf_csv_files", csv_files},
          {"regressions", nlohmann::json::array()},
          {"status", part.status},
          {"error", part.error ? nlohmann::json(*part.error) : nullptr},
          {"run_dir", part.run_dir},
          {"history", history.empty() ? nlohmann::json(nullptr) : nlohmann::json(history)},
          {"series", record_json["series"]},
          {"badges", record_json["badges"]},
          {"points", points}};
}

void print_summary_table(const HistoryRecord& record, const std::string& history,
                         const Plan& plan) {
  const ErnicctlPart& part = *record.ernicctl;
  std::size_t width = 5;
  for (const auto& point : part.points) {
    width = std::max(width, point.id.size());
  }
  // Each figure's rung of the evaluation ladder (history/rung.h): the point's, and rung 2 for
  // a runtime-start time beside it.
  fmt::print("\n{:<{}}  {:<7}  {:>4}  {:<15}  {}\n", "point", width, "status", "reps", "rung",
             "result");
  for (std::size_t i = 0; i < part.points.size(); ++i) {
    const PointRecord& point = part.points[i];
    std::string result;
    if (point.passed()) {
      const Benchmark& tool = *plan.points[i].tool;
      std::string headline = tool.headline_metric(plan.points[i].params);
      for (const auto& metric : tool.metrics()) {
        if (auto it = point.summary.find(metric.name);
            metric.name == headline && it != point.summary.end()) {
          result = fmt::format("{} {:.4g} {}", metric.name, it->second.median, metric.unit);
        }
      }
      if (point.fairness) {
        result += fmt::format(" per tenant, {}", describe_fairness(*point.fairness));
      }
      for (const auto& metric : metrics_of_rung(point, Rung::kRuntimeStart)) {
        auto declared = point.metrics.find(metric);
        result += fmt::format("; {} {} {:.4g} {}", rung_label(Rung::kRuntimeStart),
                              metric_label(metric), point.median(metric).value_or(0),
                              declared != point.metrics.end() ? declared->second.unit : "");
      }
    } else if (point.reason) {
      result = *point.reason;
    }
    Rung rung = point_rung(point);
    // Repetitions, not samples: a point with tenants has one sample per tenant.
    auto repetitions =
        std::count_if(point.samples.begin(), point.samples.end(),
                      [](const SampleRecord& s) { return s.tenant.value_or(1) == 1; });
    fmt::print("{:<{}}  {:<7}  {:>4}  {:<15}  {}\n", point.id, width, point.status, repetitions,
               fmt::format("{} {}", rung_number(rung), rung_name(rung)), result);
  }
  for (const auto& group : part.groups) {
    for (const auto& fairness : group.fairness) {
      fmt::print("{} ({}): {}\n", group_figure_name(group, fairness),
                 rung_label(Rung::kMultiTenant), describe_group_fairness(fairness));
    }
  }
  std::string t_init;
  for (const auto& host : part.hosts) {
    if (host.t_init_s) {
      t_init += fmt::format("{}{} {:.3g} s", t_init.empty() ? "" : ", ", host.name, *host.t_init_s);
    }
  }
  if (!t_init.empty()) {
    fmt::print("T_init ({}): {}\n", rung_label(kTInitRung), t_init);
  }
  fmt::print("\n{}: {} of {} points passed", part.status, reports::count_points(record).passed,
             part.points.size());
  if (part.error) {
    fmt::print(" ({})", *part.error);
  }
  fmt::print("\nrun directory: {}\n", part.run_dir);
  if (!history.empty()) {
    fmt::print("history: {}\n", history);
  }
}

// Writes files derived from the record; a file that cannot be written is reported and the rest
// are still written.
struct OutputWriter {
  bool all_written = true;

  template <typename Write>
  void attempt(Write write) {
    try {
      write();
    } catch (const std::exception& e) {
      std::cerr << "error: " << e.what() << "\n";
      all_written = false;
    }
  }
  void write(const std::filesystem::path& path, const std::string& content) {
    attempt([&] { write_file_durably(path, content, {.durability = Durability::kDerived}); });
  }
};

void append_to_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::app);
  out << text;
  out.close();
  if (!out) {
    throw std::runtime_error(
        fmt::format("cannot write {}: {}", path.string(), std::strerror(errno)));
  }
}

// Where the record goes when neither the run directory nor the history could take it.
std::filesystem::path fallback_record_path(const RunResult& result) {
  return std::filesystem::temp_directory_path() /
         fmt::format("ernicctl-record-{}.json", result.run_dir.filename().string());
}

// The record is in neither the history nor record.json: put it where it can be added from, and
// say where; print it when even that fails, so it is never lost without a trace.
void rescue_record(const RunResult& result, const std::string& record_text,
                   const std::string& history) {
  std::filesystem::path fallback = fallback_record_path(result);
  try {
    write_file_durably(fallback, record_text);
    std::cerr << fmt::format(
        "error: the record of this run is saved only in {}: add it with `ernicctl history append "
        "{}{}`\n",
        fallback.string(), fallback.string(), history.empty() ? "" : " --history " + history);
  } catch (const std::exception& e) {
    std::cerr << fmt::format(
        "error: {}; the record of this run is printed below: save it to a file and add it with "
        "`ernicctl history append FILE`\n{}",
        e.what(), record_text);
  }
}

// Saves the record before anything derived from it: record.json in the run directory, then the
// history line, each attempted whatever became of the other, so that a full run directory
// cannot cost the history its record. Returns the history's path when the line was appended.
std::string save_record(const Scenario& scenario, const RunResult& result,
                        const HistoryRecord& record, RunOutputs& outputs) {
  std::string record_text = nlohmann::json(record).dump(2) + "\n";
  std::filesystem::path record_file = result.run_dir / "record.json";
  bool in_run_dir = true;
  try {
    write_file_durably(record_file, record_text);
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    in_run_dir = false;
    outputs.all_files_written = false;
  }
  std::string history = scenario.history.path.string();
  if (!scenario.history.enabled) {
    outputs.record_saved = in_run_dir;
  } else {
    try {
      HistoryAppend append = append_history_record(scenario.history.path, record);
      if (!append.repair.empty()) {
        std::cerr << "warning: " << append.repair << "\n";
      }
      return history;
    } catch (const std::exception& e) {
      std::cerr << "error: the record was not added to the history: " << e.what() << "\n";
      outputs.record_saved = false;
    }
    if (in_run_dir) {
      std::cerr << fmt::format(
          "error: the record of this run is in {}: add it with `ernicctl history append {} "
          "--history {}` once the history can be written\n",
          record_file.string(), record_file.string(), history);
      return "";
    }
  }
  if (!in_run_dir) {
    rescue_record(result, record_text, scenario.history.enabled ? history : "");
  }
  return "";
}

}  // namespace

RunOutputs write_run_outputs(const Scenario& scenario, const Plan& plan, const RunResult& result,
                             bool json_output) {
  HistoryRecord record = build_history_record(scenario, result);
  RunOutputs outputs;
  std::string history_path = save_record(scenario, result, record, outputs);
  OutputWriter derived;
  std::string junit = reports::render_junit(record);
  derived.write(result.run_dir / "summary.md", reports::render_markdown_summary(record));
  derived.write(result.run_dir / "junit.xml", junit);
  // rocm-ernic's report script reads RESULTS/perf-csv/*.csv and RESULTS/junit/*.xml.
  derived.write(result.run_dir / "junit" / "junit.xml", junit);
  auto tables = reports::perf_tables(record);
  std::size_t csv_files = 0;
  derived.attempt(
      [&] { csv_files = reports::write_perf_csv(result.run_dir / "perf-csv", tables); });
  if (const char* step_summary = std::getenv("GITHUB_STEP_SUMMARY");
      step_summary && *step_summary) {
    derived.attempt(
        [&] { append_to_file(step_summary, reports::render_markdown_summary(record) + "\n"); });
  }
  nlohmann::json summary = summary_json(record, history_path, tables, csv_files);
  derived.write(result.run_dir / "summary.json", summary.dump(2) + "\n");
  outputs.all_files_written = outputs.all_files_written && derived.all_written;
  if (json_output) {
    std::cout << summary.dump(2) << std::endl;
  } else {
    print_summary_table(record, history_path, plan);
  }
  return outputs;
}

}  // namespace ernic
