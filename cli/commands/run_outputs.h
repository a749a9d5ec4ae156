#pragma once

#include "plan/plan.h"
#include "run/run_result.h"
#include "scenario/scenario.h"

namespace ernic {

// What became of what a run writes.
struct RunOutputs {
  // The record is in the history (or, with the history disabled, in record.json). When false,
  // the messages printed say where the record still is and how to add it.
  bool record_saved = true;
  // record.json and every file derived from the record were written.
  bool all_files_written = true;
};

// Everything a finished run leaves behind, the record first: record.json and the history line,
// then what is derived from the record (summary.md, junit.xml, perf-csv/, summary.json, the
// GitHub step summary), and the summary on stdout (a table, or the summary JSON when
// `json_output`). A file that cannot be written is reported on stderr and the rest still are.
RunOutputs write_run_outputs(const Scenario& scenario, const Plan& plan, const RunResult& result,
                             bool json_output);

}  // namespace ernic
