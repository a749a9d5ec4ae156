// What `ernicctl run` writes once the executor is done: the record, the run's files (rocm-ernic's
// perf-csv/ and junit/ included), the history line and the summary.
#include "commands/run_outputs.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>

#include "history/history_file.h"
#include "history/record.h"
#include "perf_csv.h"
#include "run/fairness.h"
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

}  // namespace

void write_run_outputs(const Scenario& scenario, const Plan& plan, const RunResult& result,
                       bool json_output) {
  HistoryRecord record = build_history_record(scenario, result);
  {
    std::ofstream out(result.run_dir / "record.json");
    out << nlohmann::json(record).dump(2) << "\n";
  }
  std::string junit = reports::render_junit(record);
  {
    std::ofstream(result.run_dir / "summary.md") << reports::render_markdown_summary(record);
    std::ofstream(result.run_dir / "junit.xml") << junit;
  }
  // rocm-ernic's report script reads RESULTS/perf-csv/*.csv and RESULTS/junit/*.xml.
  std::filesystem::create_directories(result.run_dir / "junit");
  std::ofstream(result.run_dir / "junit" / "junit.xml") << junit;
  auto tables = reports::perf_tables(record);
  std::size_t csv_files = reports::write_perf_csv(result.run_dir / "perf-csv", tables);
  if (const char* step_summary = std::getenv("GITHUB_STEP_SUMMARY");
      step_summary && *step_summary) {
    std::ofstream(step_summary, std::ios::app) << reports::render_markdown_summary(record) << "\n";
  }
  std::string history_path;
  if (scenario.history.enabled) {
    try {
      append_history_record(scenario.history.path, record);
      history_path = scenario.history.path.string();
    } catch (const std::exception& e) {
      std::cerr << "error: the result was not added to the history: " << e.what() << "\n";
    }
  }
  nlohmann::json summary = summary_json(record, history_path, tables, csv_files);
  {
    std::ofstream out(result.run_dir / "summary.json");
    out << summary.dump(2) << "\n";
  }
  if (json_output) {
    std::cout << summary.dump(2) << std::endl;
  } else {
    print_summary_table(record, history_path, plan);
  }
}

}  // namespace ernic
