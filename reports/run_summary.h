#pragma once

#include <string>

#include "history/history_record.h"

namespace ernic::reports {

// The run's points by outcome, and the JUnit test cases made of them.
struct PointCounts {
  std::size_t points = 0;
  std::size_t passed = 0;
  std::size_t failed = 0;  // neither passed nor skipped
  std::size_t skipped = 0;
  // The run did not pass although no point failed (setup failure, interrupt): JUnit gets a
  // failing "run" test case for it.
  bool run_case = false;

  std::size_t tests() const { return points + (run_case ? 1 : 0); }
  std::size_t failed_tests() const { return failed + (run_case ? 1 : 0); }
};
PointCounts count_points(const HistoryRecord& record);

// Markdown for $GITHUB_STEP_SUMMARY: the run's status and provenance, one table row per point
// (status and the median of each metric with its unit), then every failure with its reason.
std::string render_markdown_summary(const HistoryRecord& record);

// JUnit XML: one <testsuite> for the run (named after the scenario), one <testcase> per point;
// a failed point has a <failure> with its reason, a skipped one <skipped>. A run that did not
// pass although no point failed (setup failure, interrupt) gets a failing "run" test case, so a
// CI system never shows it green.
std::string render_junit(const HistoryRecord& record);

}  // namespace ernic::reports
