#include "run_summary.h"

#include <fmt/format.h>

#include "markup.h"
#include "record_points.h"

namespace ernic::reports {
namespace {

const nlohmann::json& ernicctl_part(const nlohmann::json& record) {
  static const nlohmann::json empty = nlohmann::json::object();
  if (record.is_object()) {
    auto it = record.find("ernicctl");
    if (it != record.end() && it->is_object()) {
      return *it;
    }
  }
  return empty;
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

std::string run_reason(const nlohmann::json& part) {
  for (const char* key : {"reason", "error"}) {
    std::string text = json_text(part, key);
    if (!text.empty()) {
      return text;
    }
  }
  return "";
}

double point_seconds(const nlohmann::json& point) {
  double total = 0;
  if (point.contains("samples") && point["samples"].is_array()) {
    for (const auto& sample : point["samples"]) {
      if (sample.is_object() && sample.contains("duration_s") && sample["duration_s"].is_number()) {
        total += sample["duration_s"].get<double>();
      }
    }
  }
  return total;
}

}  // namespace

std::string render_markdown_summary(const nlohmann::json& record) {
  const auto& part = ernicctl_part(record);
  std::string status = json_text(part, "status");
  std::string scenario = json_text(part.value("scenario", nlohmann::json::object()), "name");
  std::string out;
  auto it = std::back_inserter(out);
  fmt::format_to(it, "## ernicctl run {}: {}\n\n", code(scenario.empty() ? "?" : scenario),
                 status_mark(status));
  fmt::format_to(it, "Run {} \u00b7 commit {} \u00b7 runner {} \u00b7 accelerator {}",
                 code(json_text(record, "run_id")), code(json_text(record, "sha")),
                 code(json_text(record, "runner").empty() ? "self-hosted" : json_text(record, "runner")),
                 code(json_text(part, "accelerator").empty() ? "unknown" : json_text(part, "accelerator")));
  std::string duration = json_text(part, "duration_s");
  if (!duration.empty()) {
    fmt::format_to(it, " \u00b7 {} s", duration);
  }
  out += "\n\n";
  if (part.value("functional_only", false)) {
    out += "> [!WARNING]\n> A guest ran under TCG: these figures show the pipeline works, not "
           "how fast it is.\n\n";
  }
  std::string reason = run_reason(part);
  if (!reason.empty()) {
    fmt::format_to(it, "**Reason:** {}\n\n", cell(reason));
  }
  auto points = points_of(record);
  std::size_t passed = 0, failed = 0, skipped = 0;
  for (const auto& point : points) {
    passed += point.status == "passed";
    skipped += point.status == "skipped";
    failed += point.status != "passed" && point.status != "skipped";
  }
  fmt::format_to(it, "{} points: {} passed, {} failed, {} skipped.\n\n", points.size(), passed,
                 failed, skipped);
  if (!points.empty()) {
    out += "| Point | Status | Medians |\n|---|---|---|\n";
    for (const auto& point : points) {
      std::string medians;
      for (const auto& metric : metric_names(*point.json)) {
        if (auto value = metric_median(*point.json, metric)) {
          std::string unit = metric_unit(*point.json, metric);
          medians += fmt::format("{}{} {}{}{}", medians.empty() ? "" : ", ", metric,
                                 format_figure(*value), unit.empty() ? "" : " ", unit);
        }
      }
      auto samples = point.json->value("samples", nlohmann::json::array());
      fmt::format_to(it, "| {} | {} | {}{} |\n", code(point.id), status_mark(point.status),
                     cell(medians.empty() ? "\u2013" : medians),
                     samples.is_array() && samples.size() > 1
                         ? fmt::format(" (n={})", samples.size())
                         : "");
    }
    out += "\n";
  }
  if (failed > 0) {
    out += "### Failures\n\n";
    for (const auto& point : points) {
      if (point.status != "passed" && point.status != "skipped") {
        std::string log = json_text(*point.json, "log");
        fmt::format_to(it, "- {}: {}{}\n", code(point.id),
                       cell(point.reason.empty() ? "no reason recorded" : point.reason),
                       log.empty() ? "" : fmt::format(" (log: {})", code(log)));
      }
    }
    out += "\n";
  }
  return out;
}

std::string render_junit(const nlohmann::json& record) {
  const auto& part = ernicctl_part(record);
  std::string status = json_text(part, "status");
  std::string scenario = json_text(part.value("scenario", nlohmann::json::object()), "name");
  if (scenario.empty()) {
    scenario = "ernicctl";
  }
  auto points = points_of(record);
  std::size_t failures = 0, skipped = 0;
  double total_seconds = 0;
  for (const auto& point : points) {
    failures += point.status != "passed" && point.status != "skipped";
    skipped += point.status == "skipped";
    total_seconds += point_seconds(*point.json);
  }
  bool run_case = status != "passed" && failures == 0;
  std::size_t tests = points.size() + (run_case ? 1 : 0);
  failures += run_case ? 1 : 0;
  if (part.contains("duration_s") && part["duration_s"].is_number()) {
    total_seconds = part["duration_s"].get<double>();
  }
  std::string out;
  auto it = std::back_inserter(out);
  out += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  fmt::format_to(it,
                 "<testsuites name=\"ernicctl\" tests=\"{}\" failures=\"{}\" errors=\"0\" "
                 "skipped=\"{}\" time=\"{:.3f}\">\n",
                 tests, failures, skipped, total_seconds);
  fmt::format_to(it,
                 "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\" "
                 "time=\"{:.3f}\" timestamp=\"{}\" hostname=\"{}\">\n",
                 escape_markup(scenario), tests, failures, skipped, total_seconds,
                 escape_markup(json_text(part, "started")), escape_markup(json_text(record, "node")));
  out += "    <properties>\n";
  for (const auto& [name, value] :
       {std::pair<const char*, std::string>{"run_id", json_text(record, "run_id")},
        {"sha", json_text(record, "sha")},
        {"runner", json_text(record, "runner")},
        {"status", status},
        {"accelerator", json_text(part, "accelerator")},
        {"ernicctl_version", json_text(part, "version")},
        {"run_dir", json_text(part, "run_dir")}}) {
    fmt::format_to(it, "      <property name=\"{}\" value=\"{}\"/>\n", name, escape_markup(value));
  }
  out += "    </properties>\n";
  for (const auto& point : points) {
    const auto& json = *point.json;
    std::string classname = scenario + "." + json_text(json, "benchmark");
    fmt::format_to(it, "    <testcase name=\"{}\" classname=\"{}\" time=\"{:.3f}\">\n",
                   escape_markup(point.id), escape_markup(classname), point_seconds(json));
    std::string log = json_text(json, "log");
    if (point.status == "skipped") {
      fmt::format_to(it, "      <skipped message=\"{}\"/>\n", escape_markup(point.reason));
    } else if (point.status != "passed") {
      std::string reason = point.reason.empty() ? "no reason recorded" : point.reason;
      fmt::format_to(it, "      <failure message=\"{}\" type=\"{}\">{}{}</failure>\n",
                     escape_markup(reason), escape_markup(point.status.empty() ? "failed" : point.status),
                     escape_markup(reason), log.empty() ? "" : escape_markup("\nlog: " + log));
    }
    std::string medians;
    for (const auto& metric : metric_names(json)) {
      if (auto value = metric_median(json, metric)) {
        medians += fmt::format("{} median {} {}\n", metric, format_figure(*value), metric_unit(json, metric));
      }
    }
    const auto& commands = json.value("commands", nlohmann::json::object());
    if (commands.is_object()) {
      for (const auto& [role, command] : commands.items()) {
        medians += fmt::format("{}: {}\n", role, command.is_string() ? command.get<std::string>() : command.dump());
      }
    }
    if (!medians.empty()) {
      fmt::format_to(it, "      <system-out>{}</system-out>\n", escape_markup(medians));
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
