#pragma once

#include <nlohmann/json.hpp>

#include "run/run_result.h"
#include "scenario/scenario.h"

namespace ernic {

// The history record of a run (docs/history-format.md): rocm-ernic's keys, plus everything
// methodology asks for under "ernicctl".
nlohmann::json build_history_record(const Scenario& scenario, const RunResult& run);

// How the run's guests executed: "kvm", "tcg", "mixed" or "none" (no guests: processes on this
// machine), from each host's `accelerator` fact. Any guest under TCG makes the whole run's
// numbers functional only (methodology: TCG timing is not performance).
struct RunAccelerator {
  std::string name = "none";
  bool functional_only = false;
};
RunAccelerator run_accelerator(const std::vector<HostRecord>& hosts);

// Median, mean, min, max and p99 (nearest rank) of `values`.
nlohmann::json summarize(std::vector<double> values);

// This machine as the record describes it (host name, kernel, CPU, memory, OS).
nlohmann::json capture_environment();

}  // namespace ernic
