#include "run_summary.h"

#include <fmt/format.h>

#include "markup.h"
#include "record_points.h"

namespace ernic::reports {
namespace {

const ErnicctlPart& ernicctl_part(const HistoryRecord& record) {
  static const ErnicctlPart empty{.status = ""};
  return record.ernicctl ? *record.ernicctl : empty;
}

// Markdown table cells may not hold '|' or line breaks.
std::string cell(std::string text) {
  std::string out;
  for (char c : text) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n' || c == '\r') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

std::string code(const std::string& text) {
  std::string fence = text.find('`') == std::string::npos ? "`" : "`` ";
  std::string close = fence == "`" ? "`" : " ``";
  return fence + cell(text) + close;
}

std::string status_mark(const std::string& status) {
  if (status == "passed") {
    return "\u2705 passed";
  }
  if (status == "skipped") {
    return "\u23ed\ufe0f skipped";
  }
  if (status == "incomplete") {
    return "\u26a0\ufe0f incomplete";
  }
  return "\u274c " + (status.empty() ? std::string("unknown") : status);
}

std::string run_reason(const ErnicctlPart& part) {
  return part.error.value_or("");
}

double point_seconds(const PointRecord& point) {
  double total = 0;
  for (const auto& sample : point.samples) {
    total += sample.duration_s.value_or(0);
  }
  return total;
}

std::string medians_text(const PointRecord& point, const std::vector<std::string>& metrics,
                         const char* separator, const char* form) {
  std::string out;
  for (const auto& metric : metrics) {
    if (auto value = point.median(metric)) {
      std::string unit = metric_unit(point, metric);
      out += fmt::format(fmt::runtime(form), out.empty() ? "" : separator, metric_label(metric),
                         format_figure(*value), unit.empty() ? "" : " ", unit);
    }
  }
  return out;
}

// The concurrent groups' Jain's indices (rung 5), one row per index, with the members it covers.
std::string group_rows(const HistoryRecord& record) {
  std::string rows;
  for (const auto& group : ernicctl_part(record).groups) {
    for (const auto& fairness : group.fairness) {
      std::string members;
      for (const auto& member : fairness.members) {
        members += (members.empty() ? "" : ", ") + code(member);
      }
      rows += fmt::format("| {} | {} | {} {} | {} (n={}), shares {}\u2013{} |\n", cell(group.name),
                          members, fairness.metric, cell(fairness.unit),
                          format_figure(fairness.jain.median), fairness.jain.n,
                          format_figure(fairness.min_share), format_figure(fairness.max_share));
    }
  }
  return rows;
}

// Rung 1 (the hosts' T_init), then one table per rung of the points' figures: figures of
// different rungs never share a table (methodology item 6).
void render_rung_tables(const HistoryRecord& record, const std::vector<PointView>& points,
                        std::string& out) {
  auto it = std::back_inserter(out);
  std::string hosts;
  for (const auto& host : ernicctl_part(record).hosts) {
    if (host.t_init_s) {
      hosts += fmt::format("| {} | {} | {} |\n", code(host.name), cell(host.provider),
                           format_figure(*host.t_init_s));
    }
  }
  if (!hosts.empty()) {
    fmt::format_to(it, "### {}\n\n| Host | Provider | T_init (s) |\n|---|---|---|\n{}\n",
                   rung_label(kTInitRung), hosts);
  }
  for (Rung rung : kAllRungs) {
    std::string rows;
    for (const auto& point : points) {
      const PointRecord& record_point = *point.record;
      if (rung == kTInitRung || !shows_in_rung(record_point, rung)) {
        continue;
      }
      std::string medians =
          medians_text(record_point, metrics_of_rung(record_point, rung), ", ", "{}{} {}{}{}");
      std::size_t samples = record_point.samples.size();
      rows += fmt::format("| {} | {} | {}{} |\n", code(point.id()), status_mark(point.status()),
                          cell(medians.empty() ? "\u2013" : medians),
                          samples > 1 ? fmt::format(" (n={})", samples) : "");
    }
    std::string groups = rung == Rung::kMultiTenant ? group_rows(record) : "";
    if (!rows.empty() || !groups.empty()) {
      fmt::format_to(it, "### {}\n\n", rung_label(rung));
    }
    if (!rows.empty()) {
      fmt::format_to(it, "| Point | Status | Medians |\n|---|---|---|\n{}\n", rows);
    }
    if (!groups.empty()) {
      fmt::format_to(it,
                     "| Concurrent group | Members covered | Metric | Jain's index |\n"
                     "|---|---|---|---|\n{}\n",
                     groups);
    }
  }
}

}  // namespace

PointCounts count_points(const HistoryRecord& record) {
  PointCounts counts;
  for (const auto& point : record.points()) {
    ++counts.points;
    counts.passed += point.status == "passed";
    counts.skipped += point.status == "skipped";
    counts.failed += point.status != "passed" && point.status != "skipped";
  }
  counts.run_case = record.run_status() != "passed" && counts.failed == 0;
  return counts;
}

std::string render_markdown_summary(const HistoryRecord& record) {
  const auto& part = ernicctl_part(record);
  const std::string& status = part.status;
  const std::string& scenario = part.scenario.name;
  std::string out;
  auto it = std::back_inserter(out);
  fmt::format_to(it, "## ernicctl run {}: {}\n\n", code(scenario.empty() ? "?" : scenario),
                 status_mark(status));
  fmt::format_to(it, "Run {} \u00b7 commit {} \u00b7 runner {} \u00b7 accelerator {}",
                 code(record.run_id), code(record.sha), code(record.runner_class()),
                 code(part.accelerator.empty() ? "unknown" : part.accelerator));
  if (part.duration_s) {
    fmt::format_to(it, " \u00b7 {} s", nlohmann::json(*part.duration_s).dump());
  }
  out += "\n\n";
  if (part.functional_only) {
    out +=
        "> [!WARNING]\n> A guest ran under TCG: these figures show the pipeline works, not "
        "how fast it is.\n\n";
  }
  std::string reason = run_reason(part);
  if (!reason.empty()) {
    fmt::format_to(it, "**Reason:** {}\n\n", cell(reason));
  }
  auto points = points_of(record);
  PointCounts counts = count_points(record);
  fmt::format_to(it, "{} points: {} passed, {} failed, {} skipped.\n\n", counts.points,
                 counts.passed, counts.failed, counts.skipped);
  render_rung_tables(record, points, out);
  if (counts.failed > 0) {
    out += "### Failures\n\n";
    for (const auto& point : points) {
      if (point.status() != "passed" && point.status() != "skipped") {
        std::string log = point.record->log_paths();
        fmt::format_to(it, "- {}: {}{}\n", code(point.id()),
                       cell(point.reason().empty() ? "no reason recorded" : point.reason()),
                       log.empty() ? "" : fmt::format(" (log: {})", code(log)));
      }
    }
    out += "\n";
  }
  return out;
}

std::string render_junit(const HistoryRecord& record) {
  const auto& part = ernicctl_part(record);
  const std::string& status = part.status;
  std::string scenario = part.scenario.name;
  if (scenario.empty()) {
    scenario = "ernicctl";
  }
  auto points = points_of(record);
  PointCounts counts = count_points(record);
  double total_seconds = 0;
  for (const auto& point : points) {
    total_seconds += point_seconds(*point.record);
  }
  std::size_t tests = counts.tests();
  std::size_t failures = counts.failed_tests();
  std::size_t skipped = counts.skipped;
  bool run_case = counts.run_case;
  if (part.duration_s) {
    total_seconds = *part.duration_s;
  }
  std::string out;
  auto it = std::back_inserter(out);
  out += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  fmt::format_to(it,
                 "<testsuites name=\"ernicctl\" tests=\"{}\" failures=\"{}\" errors=\"0\" "
                 "skipped=\"{}\" time=\"{:.3f}\">\n",
                 tests, failures, skipped, total_seconds);
  fmt::format_to(
      it,
      "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\" "
      "time=\"{:.3f}\" timestamp=\"{}\" hostname=\"{}\">\n",
      escape_markup(scenario), tests, failures, skipped, total_seconds, escape_markup(part.started),
      escape_markup(record.node));
  out += "    <properties>\n";
  for (const auto& [name, value] : {std::pair<const char*, std::string>{"run_id", record.run_id},
                                    {"sha", record.sha},
                                    {"runner", record.runner.value_or("")},
                                    {"status", status},
                                    {"accelerator", part.accelerator},
                                    {"ernicctl_version", part.version},
                                    {"run_dir", part.run_dir}}) {
    fmt::format_to(it, "      <property name=\"{}\" value=\"{}\"/>\n", name, escape_markup(value));
  }
  out += "    </properties>\n";
  for (const auto& point : points) {
    const PointRecord& p = *point.record;
    std::string classname = scenario + "." + p.benchmark;
    fmt::format_to(it, "    <testcase name=\"{}\" classname=\"{}\" time=\"{:.3f}\">\n",
                   escape_markup(p.id), escape_markup(classname), point_seconds(p));
    std::string log = p.log_paths();
    if (p.status == "skipped") {
      fmt::format_to(it, "      <skipped message=\"{}\"/>\n", escape_markup(point.reason()));
    } else if (p.status != "passed") {
      std::string reason = point.reason().empty() ? "no reason recorded" : point.reason();
      fmt::format_to(it, "      <failure message=\"{}\" type=\"{}\">{}{}</failure>\n",
                     escape_markup(reason), escape_markup(p.status.empty() ? "failed" : p.status),
                     escape_markup(reason), log.empty() ? "" : escape_markup("\nlog: " + log));
    }
    std::string output = medians_text(p, p.measured_metrics(), "", "{}{} median {}{}{}\n");
    for (const auto& [role, command] : p.commands) {
      output += fmt::format("{}: {}\n", role, command);
    }
    if (!output.empty()) {
      fmt::format_to(it, "      <system-out>{}</system-out>\n", escape_markup(output));
    }
    out += "    </testcase>\n";
  }
  if (run_case) {
    std::string reason = run_reason(part);
    if (reason.empty()) {
      reason = fmt::format("run status is {}", status.empty() ? "unknown" : status);
    }
    fmt::format_to(it,
                   "    <testcase name=\"run\" classname=\"{}\" time=\"0\">\n      <failure "
                   "message=\"{}\" type=\"{}\">{}</failure>\n    </testcase>\n",
                   escape_markup(scenario), escape_markup(reason),
                   escape_markup(status.empty() ? "unknown" : status), escape_markup(reason));
  }
  out += "  </testsuite>\n</testsuites>\n";
  return out;
}

}  // namespace ernic::reports
