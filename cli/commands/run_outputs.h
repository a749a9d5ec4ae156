#pragma once

#include "plan/plan.h"
#include "run/run_result.h"
#include "scenario/scenario.h"

namespace ernic {

// Everything a finished run leaves behind: record.json, summary.md, junit.xml and summary.json in
// the run directory, the history line, the GitHub step summary, and the summary on stdout (a
// table, or the summary JSON when `json_output`).
void write_run_outputs(const Scenario& scenario, const Plan& plan, const RunResult& result,
                       bool json_output);

}  // namespace ernic
