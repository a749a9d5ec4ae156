#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace ernic::reports {

// Markdown for $GITHUB_STEP_SUMMARY: the run's status and provenance, one table row per point
// (status and the median of each metric with its unit), then every failure with its reason.
std::string render_markdown_summary(const nlohmann::json& record);

// JUnit XML: one <testsuite> for the run (named after the scenario), one <testcase> per point;
// a failed point has a <failure> with its reason, a skipped one <skipped>. A run that did not
// pass although no point failed (setup failure, interrupt) gets a failing "run" test case, so a
// CI system never shows it green.
std::string render_junit(const nlohmann::json& record);

}  // namespace ernic::reports
