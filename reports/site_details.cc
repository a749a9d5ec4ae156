// A run's details section: what produced its figures (provenance, environment, tool versions,
// hosts) and every point with its status, medians, commands and logs.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "history/statistics.h"
#include "markup.h"
#include "record_points.h"
#include "site_parts.h"
#include "svg_chart.h"

namespace ernic::reports {
namespace {

class RunDetails : PagePart {
 public:
  using PagePart::PagePart;

  void definition(const char* term, const std::string& value) {
    if (!value.empty()) {
      fmt::format_to(out_, "<dt>{}</dt><dd>{}</dd>", term, escape_markup(value));
    }
  }

  void render_details(const ShownRun& shown) {
    const auto& run = index_.runs[shown.index];
    fmt::format_to(out_,
                   "<details id=\"{}\"><summary>run <strong>{}</strong> \u00b7 <code>{}</code> "
                   "\u00b7 {} \u00b7 {}</summary>\n<dl>",
                   shown.anchor, escape_markup(run.run_id.empty() ? "?" : run.run_id),
                   escape_markup(run.sha), escape_markup(run.generated),
                   escape_markup(run.ernicctl ? run.run_status() : "rocm-ernic record"));
    definition("run id", run.run_id);
    definition("commit", run.sha);
    definition("generated", run.generated);
    definition("node", run.node);
    definition("runner class", run.runner_class());
    definition("recorded in", fmt::format("{}:{}", index_.sources[run.source].string(), run.line));
    if (!shown.record) {
      out("</dl>\n<p class=\"note\">");
      out(run.ernicctl ? "The record could not be read again."
                       : "A rocm-ernic record: it keeps the commit, the node and the tracked "
                         "medians only; commands, tool versions and the accelerator were not "
                         "recorded.");
      out("</p>\n</details>\n");
      return;
    }
    const ErnicctlPart& part = *shown.record->ernicctl;
    definition("scenario", part.scenario.name);
    definition("scenario file", part.scenario.path);
    definition("scenario sha256", part.scenario.sha256);
    definition("status", part.status);
    definition("started", part.started);
    definition("duration (s)", part.duration_s ? format_figure(*part.duration_s, 6) : "");
    definition("ernicctl", fmt::format("{} ({})", part.version, part.git_sha));
    definition("accelerator",
               part.accelerator + (part.functional_only ? " (functional only)" : ""));
    definition("run directory", part.run_dir);
    // Kept in a variable: a range-for over a temporary's items() reads freed memory (C++20).
    const nlohmann::json environment = part.environment;
    for (const auto& [key, value] : environment.items()) {
      definition(key.c_str(), value.is_string() ? value.get<std::string>() : value.dump());
    }
    for (const auto& [key, value] : part.tools) {
      definition(("version of " + key).c_str(), value);
    }
    definition("emulator", part.emulator.is_null() ? "" : part.emulator.dump());
    definition("hosts", part.hosts.empty() ? "" : nlohmann::json(part.hosts).dump());
    out("</dl>\n");
    render_point_details(shown);
    render_progress(shown);
    out("</details>\n");
  }

 private:
  // One table per rung: a point with figures of two rungs (a runtime-start time beside its
  // bandwidth) has a row in each, with that rung's figures.
  void render_point_details(const ShownRun& shown) {
    auto points = points_of(*shown.record);
    for (Rung rung : kAllRungs) {
      std::vector<const PointView*> rows;
      for (const auto& point : points) {
        if (shows_in_rung(*point.record, rung)) {
          rows.push_back(&point);
        }
      }
      if (rows.empty()) {
        continue;
      }
      fmt::format_to(out_,
                     "<table data-rung=\"{}\">\n<caption>{}</caption>\n<tr><th "
                     "class=\"text\">point</th><th class=\"text\">status</th><th>reps</th><th "
                     "class=\"text\">medians</th><th class=\"text\">commands</th><th "
                     "class=\"text\">log</th></tr>\n",
                     rung_number(rung), escape_markup(rung_label(rung)));
      for (const auto* point : rows) {
        render_point_row(shown, *point, rung);
      }
      out("</table>\n");
    }
  }

  // Progress over time: every interval series a sample holds (per-second rates of a duration
  // point, iperf3's intervals), one chart per tenant and repetition, so each has one y scale.
  void render_progress(const ShownRun& shown) {
    bool any = false;
    for (const auto& point : points_of(*shown.record)) {
      const PointRecord& p = *point.record;
      for (const auto& sample : p.samples) {
        auto found = sample.distributions.find(kBandwidthDistribution);
        if (found == sample.distributions.end() || !found->second.interval_s ||
            found->second.values.size() < 2) {
          continue;
        }
        if (!any) {
          out("<h4>Progress over time</h4>\n");
          any = true;
        }
        render_series_chart(shown, point, sample, found->second);
      }
    }
  }

  void render_series_chart(const ShownRun& shown, const PointView& point,
                           const SampleRecord& sample, const Distribution& series) {
    const PointRecord& p = *point.record;
    std::string who = sample.tenant
                          ? fmt::format(", tenant {}",
                                        sample.tenant_name.value_or(std::to_string(*sample.tenant)))
                          : "";
    ChartSpec chart{.id = fmt::format("{}-p{}-r{}-t{}", shown.anchor, point.index, sample.rep,
                                      sample.tenant.value_or(0)),
                    .title = fmt::format("{}{}, repetition {}", p.id, who, sample.rep),
                    .unit = "GB/s",
                    .y_label = "GB/s per interval, higher is better",
                    .x_label = fmt::format("seconds of measured time ({} s per interval)",
                                           format_figure(*series.interval_s)),
                    .css_class = "series-progress",
                    .rung = point_rung(p),
                    .points = {}};
    for (std::size_t i = 0; i < series.values.size(); ++i) {
      std::string at = format_figure(static_cast<double>(i + 1) * *series.interval_s);
      chart.points.push_back(
          {.label = at,
           .value = series.values[i],
           .href = "",
           .tooltip = fmt::format("{} s: {} GB/s", at, format_figure(series.values[i]))});
    }
    out(render_svg_chart(chart));
  }

  // The table that holds a point's anchor: its own rung's, else the first it shows in.
  static Rung anchor_rung(const PointRecord& point) {
    Rung own = point_rung(point);
    for (Rung rung : kAllRungs) {
      if (shows_in_rung(point, own) ? rung == own : shows_in_rung(point, rung)) {
        return rung;
      }
    }
    return own;
  }

  void render_point_row(const ShownRun& shown, const PointView& point, Rung rung) {
    const PointRecord& p = *point.record;
    std::string medians;
    for (const auto& metric : metrics_of_rung(p, rung)) {
      if (auto value = p.median(metric)) {
        medians += fmt::format("{}{} = {} {}", medians.empty() ? "" : "<br/>",
                               escape_markup(metric_label(metric)), format_figure(*value),
                               escape_markup(metric_unit(p, metric)));
      }
    }
    std::string commands;
    for (const auto& [role, command] : p.commands) {
      commands += fmt::format("{}{}: <code>{}</code>", commands.empty() ? "" : "<br/>",
                              escape_markup(role), escape_markup(command));
    }
    // A point with several tenants: every tenant's lines after the first tenant's.
    for (const auto& [tenant, recorded] : p.tenants) {
      for (const auto& [role, command] : recorded.commands) {
        commands += fmt::format("<br/>{} {}: <code>{}</code>", escape_markup(tenant),
                                escape_markup(role), escape_markup(command));
      }
    }
    std::string status = escape_markup(p.status);
    if (p.reason && !p.reason->empty()) {
      status += ": " + escape_markup(*p.reason);
    }
    std::string anchor =
        rung == anchor_rung(p) ? fmt::format(" id=\"{}-p{}\"", shown.anchor, point.index) : "";
    fmt::format_to(out_,
                   "<tr{}><td class=\"text\">{}</td><td class=\"text{}\">{}</td><td>{}</td>"
                   "<td class=\"text\" data-rung=\"{}\">{}</td><td class=\"text\">{}</td><td "
                   "class=\"text\"><code>{}</code></td></tr>\n",
                   anchor, escape_markup(p.id), p.passed() ? "" : " failed", status,
                   p.repetitions ? std::to_string(*p.repetitions) : std::string(),
                   rung_number(rung), medians, commands, escape_markup(p.log_paths()));
  }
};

}  // namespace

void render_run_details(const RunIndex& index, const SiteOptions& options, std::string& html,
                        const ShownRun& shown) {
  RunDetails(index, options, html).render_details(shown);
}

}  // namespace ernic::reports
