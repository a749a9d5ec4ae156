#pragma once

#include <nlohmann/json.hpp>

#include "run/run_result.h"
#include "scenario/scenario.h"

namespace ernic {

// The history record of a run (docs/history-format.md): rocm-ernic's keys, plus everything
// methodology asks for under "ernicctl".
nlohmann::json build_history_record(const Scenario& scenario, const RunResult& run);

// Median, mean, min, max and p99 (nearest rank) of `values`.
nlohmann::json summarize(std::vector<double> values);

// This machine as the record describes it (host name, kernel, CPU, memory, OS).
nlohmann::json capture_environment();

}  // namespace ernic
