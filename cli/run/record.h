#pragma once

#include <chrono>

#include <string>
#include <string_view>

#include "history/history_record.h"
#include "run/run_result.h"
#include "scenario/scenario.h"

namespace ernic {

// The history record of a run (docs/history-format.md): rocm-ernic's keys, plus everything
// methodology asks for under "ernicctl".
HistoryRecord build_history_record(const Scenario& scenario, const RunResult& run);

// The runner class a record names: the scenario's `runner`, with "auto" (the default) resolved
// to "github-hosted" on a GitHub-hosted runner (`runner_environment`, GitHub's
// RUNNER_ENVIRONMENT, is "github-hosted") and to "self-hosted" otherwise, the only two classes
// rocm-ernic's publisher charts. Any other class is kept as given.
// "2026-12-01T15:33:29Z", as records write times.
std::string iso8601(std::chrono::system_clock::time_point time);

std::string resolve_runner_class(std::string_view declared, std::string_view runner_environment);
// The same, reading RUNNER_ENVIRONMENT.
std::string resolve_runner_class(std::string_view declared);

// How the run's guests executed: "kvm", "tcg", "mixed" or "none" (no guests: processes on this
// machine), from each host's `accelerator` fact. Any guest under TCG makes the whole run's
// numbers functional only (methodology: TCG timing is not performance).
struct RunAccelerator {
  std::string name = "none";
  bool functional_only = false;
};
RunAccelerator run_accelerator(const std::vector<HostRecord>& hosts);

// This machine as the record describes it (host name, kernel, CPU, memory, OS).
EnvironmentInfo capture_environment();

}  // namespace ernic
