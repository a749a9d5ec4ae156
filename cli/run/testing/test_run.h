#pragma once

// For tests: a finished run as the executor leaves it (planned points, results, samples),
// without running anything.

#include <chrono>
#include <deque>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "benchmarks/benchmark.h"
#include "builtin_platform.h"
#include "plan/plan.h"
#include "run/run_result.h"
#include "scenario/platform.h"
#include "scenario/scenario.h"

namespace ernic::testing {

class TestRun {
 public:
  using Metrics = std::map<std::string, double>;

  explicit TestRun(std::filesystem::path run_dir = "/tmp/runs/test-run") {
    scenario.name = "test-run";
    scenario.runner = "auto";
    scenario.history.enabled = false;
    run.run_dir = std::move(run_dir);
    run.run_name = run.run_dir.filename().string();
    run.run_token = "t0k3n";
    run.started = std::chrono::system_clock::time_point(std::chrono::seconds(1780000000));
    run.finished = run.started + std::chrono::seconds(12);
  }

  // A point of `tool` with these parameters and one result per entry of `samples`; a point that
  // did not pass gets `reason`.
  void add(const std::string& tool, const std::string& id,
           const std::vector<std::pair<std::string, std::string>>& params,
           const std::vector<Metrics>& samples, PointStatus status = PointStatus::kPassed,
           int repetitions = 0, const std::string& reason = "") {
    auto& entry = entries_.emplace_back();
    entry.name = id.substr(0, id.find('['));
    entry.tool = tool;
    entry.server = "server";
    entry.client = "client";
    entry.repetitions = repetitions > 0 ? repetitions : static_cast<int>(samples.size());
    PlannedPoint point{.index = static_cast<int>(planned_.size()),
                       .id = id,
                       .entry = &entry,
                       .tool = platform_.tool(tool),
                       .repetitions = entry.repetitions};
    for (const auto& [key, value] : params) {
      point.params.set(key, value);
    }
    planned_.push_back(std::move(point));
    PointResult result{.status = status, .reason = reason};
    result.client_command = tool + " --client";
    for (std::size_t i = 0; i < samples.size(); ++i) {
      result.samples.push_back({.repetition = static_cast<int>(i) + 1,
                                .warm = i > 0,
                                .duration_s = 1.5,
                                .tool_s = 1.0,
                                .metrics = samples[i]});
    }
    results_.push_back(std::move(result));
  }

  // Links results to their points; call once every point is added.
  const RunResult& finish(RunStatus status = RunStatus::kPassed) {
    run.status = status;
    run.points = results_;
    plan.scenario = &scenario;
    plan.points.assign(planned_.begin(), planned_.end());
    for (std::size_t i = 0; i < run.points.size(); ++i) {
      run.points[i].point = &plan.points[i];
    }
    return run;
  }

  Scenario scenario;
  RunResult run;
  Plan plan;

 private:
  const Platform platform_ = builtin_platform();
  std::deque<BenchmarkEntry> entries_;
  std::vector<PlannedPoint> planned_;
  std::vector<PointResult> results_;
};

}  // namespace ernic::testing
