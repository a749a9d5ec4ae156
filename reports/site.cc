#include "site.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <iterator>
#include <map>
#include <set>
#include <unordered_map>

#include "badges.h"
#include "base/durable_file.h"
#include "base/version.h"
#include "history/statistics.h"
#include "markup.h"
#include "record_points.h"
#include "site_parts.h"
#include "svg_chart.h"

namespace ernic::reports {
namespace {

struct SeriesSpec {
  Series series;
  const char* title;
  const char* source;  // what the value is, for the caption
  const char* unit;
  bool higher_better;
  const char* css_class;
};

constexpr SeriesSpec kSeriesSpecs[] = {
    {Series::kBandwidth, "Send bandwidth", "median bw_peak_GBs of ib_send_bw (series.bandwidth)",
     "GB/s", true, "s-bandwidth"},
    {Series::kLatency, "Send latency", "median lat_typical_us of ib_send_lat (series.latency)",
     "\u00b5s", false, "s-latency"},
    {Series::kTcp, "TCP bandwidth", "iperf3 receiver bandwidth (badges.tcp_bw_GBs)", "GB/s", true,
     "s-tcp"},
    {Series::kNvmeof, "NVMe-oF bandwidth", "median bw_avg_GBs of fio (series.nvmeof)", "GB/s", true,
     "s-nvmeof"},
};

constexpr Rung kTrendRung = Rung::kExecution;

constexpr const char* kStyle = R"css(
:root{color-scheme:light dark;--bg:#ffffff;--fg:#1b1b1f;--muted:#5f6368;--rule:#d8d8de;
--panel:#f7f7f9;--link:#1a5fb4;--bad:#b42318;--c-bandwidth:#1f6fd1;--c-latency:#c2410c;
--c-tcp:#15803d;--c-nvmeof:#7c3aed}
@media (prefers-color-scheme:dark){:root{--bg:#16161a;--fg:#e8e8ec;--muted:#a0a0aa;
--rule:#3a3a42;--panel:#202026;--link:#8ab4f8;--bad:#ff8a80;--c-bandwidth:#5aa2ff;
--c-latency:#ff8a4c;--c-tcp:#4ade80;--c-nvmeof:#b794ff}}
body{background:var(--bg);color:var(--fg);font:14px/1.45 system-ui,sans-serif;margin:0 auto;
max-width:1240px;padding:16px 24px}
a{color:var(--link)}
h2{border-bottom:2px solid var(--rule);padding-bottom:4px;margin-top:40px}
h3{margin-top:28px}
.note{color:var(--muted)}
.charts{display:flex;flex-wrap:wrap;gap:12px}
figure{margin:0;background:var(--panel);border-radius:6px;padding:6px}
figcaption{color:var(--muted);font-size:12px;max-width:360px;padding:0 6px 4px}
svg.chart{display:block}
svg.chart .plot{fill:var(--bg);stroke:var(--rule)}
svg.chart .grid{stroke:var(--rule);stroke-width:1}
svg.chart .tick{fill:var(--muted);font:11px system-ui,sans-serif}
svg.chart .axis-label{fill:var(--fg);font:11px system-ui,sans-serif}
svg.chart .chart-title{fill:var(--fg);font:600 13px system-ui,sans-serif}
svg.chart .newest{fill:var(--fg);font:600 12px system-ui,sans-serif}
svg.chart .line{fill:none;stroke-width:2;stroke-linejoin:round}
svg.chart .dot{stroke:var(--bg);stroke-width:1}
svg.s-bandwidth .line{stroke:var(--c-bandwidth)} svg.s-bandwidth .dot{fill:var(--c-bandwidth)}
svg.s-latency .line{stroke:var(--c-latency)} svg.s-latency .dot{fill:var(--c-latency)}
svg.s-tcp .line{stroke:var(--c-tcp)} svg.s-tcp .dot{fill:var(--c-tcp)}
svg.s-nvmeof .line{stroke:var(--c-nvmeof)} svg.s-nvmeof .dot{fill:var(--c-nvmeof)}
table{border-collapse:collapse;margin:8px 0;font-variant-numeric:tabular-nums}
th,td{border:1px solid var(--rule);padding:3px 8px;text-align:right;vertical-align:top}
th{background:var(--panel)}
td.text,th.text{text-align:left}
.failed{color:var(--bad);font-weight:600}
code{font-size:12px;word-break:break-all}
figcaption code,h2 code{word-break:normal}
details{background:var(--panel);border-radius:6px;margin:6px 0;padding:4px 10px}
details:target{outline:2px solid var(--link)}
summary{cursor:pointer}
dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px}
dt{color:var(--muted)}
dd{margin:0}
)css";

std::string now_utc() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return text;
}

std::string run_label(const RunEntry& run) {
  return run.sha.empty() ? (run.run_id.empty() ? "?" : run.run_id) : run.sha;
}

class PageWriter : PagePart {
 public:
  PageWriter(const RunIndex& index, const SiteOptions& options, std::vector<std::string>& warnings)
      : PagePart(index, options, page_), warnings_(warnings) {}

  std::string render() {
    auto classes = index_.runner_classes();
    fmt::format_to(out_,
                   "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n"
                   "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n"
                   "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
                   "style-src 'unsafe-inline'; img-src data:\"/>\n"
                   "<title>{}</title>\n<style>{}</style>\n</head>\n<body>\n",
                   escape_markup(options_.title), kStyle);
    fmt::format_to(out_, "<header>\n<h1>{}</h1>\n", escape_markup(options_.title));
    fmt::format_to(out_, "<p class=\"note\">{} runs from ", index_.runs.size());
    for (std::size_t i = 0; i < index_.sources.size(); ++i) {
      fmt::format_to(out_, "{}<code>{}</code>", i ? ", " : "",
                     escape_markup(index_.sources[i].string()));
    }
    fmt::format_to(out_,
                   ". Rendered by ernicctl {} at {}. Each runner class has its own charts: runs "
                   "of different machines are never joined into one line.</p>\n",
                   ernic_version(), now_utc());
    if (!classes.empty()) {
      out("<nav><p>Runner classes:");
      for (const auto& name : classes) {
        fmt::format_to(out_, " <a href=\"#{}\">{}</a>", class_anchor(name), escape_markup(name));
      }
      out("</p></nav>\n");
    }
    if (!index_.warnings.empty()) {
      fmt::format_to(out_,
                     "<details class=\"warnings\"><summary>{} history lines skipped</summary><ul>",
                     index_.warnings.size());
      for (const auto& warning : index_.warnings) {
        fmt::format_to(out_, "<li><code>{}</code></li>", escape_markup(warning));
      }
      out("</ul></details>\n");
    }
    out("</header>\n<main>\n");
    if (classes.empty()) {
      out("<p>No runs recorded yet.</p>\n");
    }
    for (const auto& name : classes) {
      render_class(name);
    }
    out("</main>\n</body>\n</html>\n");
    return std::move(page_);
  }

  std::size_t charts() const { return charts_; }

 private:
  std::string make_run_anchor(const RunEntry& run) {
    std::string base =
        "run-" + anchor_id(run.run_id.empty() ? fmt::format("line{}", run.line) : run.run_id);
    std::string anchor = base;
    for (int n = 2; !anchors_.insert(anchor).second; ++n) {
      anchor = fmt::format("{}-{}", base, n);
    }
    return anchor;
  }

  void render_class(const std::string& name) {
    auto all = index_.runs_of(name);
    std::size_t keep =
        options_.chart_runs == 0 ? all.size() : std::max(options_.chart_runs, options_.table_runs);
    std::size_t first = all.size() > keep ? all.size() - keep : 0;
    std::vector<ShownRun> shown;
    for (std::size_t i = first; i < all.size(); ++i) {
      ShownRun run;
      run.index = all[i];
      const auto& entry = index_.runs[run.index];
      run.anchor = make_run_anchor(entry);
      if (entry.ernicctl) {
        try {
          run.record = load_record(index_, entry);
        } catch (const std::exception& e) {
          warnings_.push_back(e.what());
        }
      }
      shown.push_back(std::move(run));
    }
    std::size_t chart_count =
        options_.chart_runs == 0 ? shown.size() : std::min(options_.chart_runs, shown.size());
    std::vector<const ShownRun*> charted;
    for (std::size_t i = shown.size() - chart_count; i < shown.size(); ++i) {
      charted.push_back(&shown[i]);
    }

    fmt::format_to(
        out_, "<section class=\"runner-class\" id=\"{}\">\n<h2>Runner class <code>{}</code></h2>\n",
        class_anchor(name), escape_markup(name));
    fmt::format_to(out_,
                   "<p class=\"note\">{} runs of this class; the charts show the newest {}, oldest "
                   "on the left. Each chart is one size on its own y scale; each point links to "
                   "the run that produced it.</p>\n",
                   all.size(), charted.size());
    // The trend series hold execution points only (the record publishes no other rung's), so
    // every chart is of rung 3.
    fmt::format_to(out_, "<p class=\"note\">Trend charts: {} figures.</p>\n",
                   escape_markup(rung_label(kTrendRung)));
    render_trends(name, charted);
    render_run_tables(index_, options_, page_, name, shown);
    fmt::format_to(out_, "<h3 id=\"{}-details\">Run details</h3>\n", class_anchor(name));
    for (auto it = shown.rbegin(); it != shown.rend(); ++it) {
      render_run_details(index_, options_, page_, *it);
    }
    out("</section>\n");
  }

  // A trend is one scenario's series: the charted runs are grouped by the scenario that made
  // them (rocm-ernic's own records, which name none, are a group of their own), and no line
  // joins two scenarios' figures for the same size.
  void render_trends(const std::string& runner, const std::vector<const ShownRun*>& charted) {
    std::map<std::string, std::vector<const ShownRun*>> by_scenario;
    for (const auto* run : charted) {
      const RunEntry& entry = index_.runs[run->index];
      bool has_figures =
          std::any_of(std::begin(kSeriesSpecs), std::end(kSeriesSpecs),
                      [&](const SeriesSpec& spec) { return !entry.values(spec.series).empty(); });
      if (has_figures) {  // a scenario without trend figures gets no empty heading
        by_scenario[entry.scenario_name()].push_back(run);
      }
    }
    if (by_scenario.size() > 1) {
      out("<p class=\"note\">Scenarios charted:");
      for (const auto& [scenario, runs] : by_scenario) {
        fmt::format_to(out_, " <a href=\"#{}\">{}</a> ({} runs)", scenario_anchor(runner, scenario),
                       scenario_title(scenario), runs.size());
      }
      out(".</p>\n");
    }
    for (const auto& [scenario, runs] : by_scenario) {
      fmt::format_to(out_, "<h3 id=\"{}\">Trends of {}</h3>\n", scenario_anchor(runner, scenario),
                     scenario_title(scenario));
      for (const auto& spec : kSeriesSpecs) {
        render_series(runner, scenario, spec, runs);
      }
    }
  }

  static std::string scenario_title(const std::string& scenario) {
    return scenario.empty() ? std::string("rocm-ernic's records (no scenario)")
                            : fmt::format("scenario <code>{}</code>", escape_markup(scenario));
  }

  // Anchors and chart ids name the scenario; rocm-ernic's records keep the ids they had.
  static std::string scenario_part(const std::string& scenario) {
    return scenario.empty() ? "" : "-scenario-" + anchor_id(scenario);
  }
  static std::string scenario_anchor(const std::string& runner, const std::string& scenario) {
    return fmt::format("{}-trends{}", class_anchor(runner), scenario_part(scenario));
  }

  void render_series(const std::string& runner, const std::string& scenario, const SeriesSpec& spec,
                     const std::vector<const ShownRun*>& charted) {
    // rocm-ernic's rule: a run without this series at all is not on its x axis.
    std::vector<const ShownRun*> runs;
    std::set<std::uint64_t> sizes;
    for (const auto* run : charted) {
      const auto& values = index_.runs[run->index].values(spec.series);
      if (values.empty()) {
        continue;
      }
      runs.push_back(run);
      for (const auto& [size, value] : values) {
        sizes.insert(size);
      }
    }
    if (runs.empty()) {
      return;
    }
    std::string series_anchor = fmt::format("{}{}-{}", class_anchor(runner),
                                            scenario_part(scenario), series_key(spec.series));
    fmt::format_to(out_, "<h4 id=\"{}\">{} ({}, {} is better)</h4>\n<div class=\"charts\">\n",
                   series_anchor, spec.title, escape_markup(spec.unit),
                   spec.higher_better ? "higher" : "lower");
    for (auto size : sizes) {
      ChartSpec chart;
      chart.id = fmt::format("chart-{}{}-{}", anchor_id(runner), scenario_part(scenario),
                             series_key(spec.series));
      chart.title = spec.title;
      if (spec.series != Series::kTcp) {
        chart.id += fmt::format("-{}", size);
        chart.title += ", " + size_label(size);
      }
      chart.unit = spec.unit;
      chart.y_label =
          fmt::format("{}, {} is better", spec.unit, spec.higher_better ? "higher" : "lower");
      chart.x_label = "runs, oldest to newest (commit sha)";
      chart.css_class = spec.css_class;
      chart.rung = kTrendRung;
      for (const auto* run : runs) {
        const auto& entry = index_.runs[run->index];
        ChartPoint point;
        point.label = run_label(entry);
        point.href = "#" + run->anchor;
        for (const auto& [s, value] : entry.values(spec.series)) {
          if (s == size) {
            point.value = value;
          }
        }
        point.tooltip = fmt::format("{} {}: {} {} (run {}, {})", run_label(entry), entry.generated,
                                    point.value ? format_figure(*point.value) : "no value",
                                    spec.unit, entry.run_id, entry.node);
        chart.points.push_back(std::move(point));
      }
      fmt::format_to(out_,
                     "<figure>\n{}<figcaption>{}; {} runs of {} on <code>{}</code>, newest <a "
                     "href=\"{}\">{}</a>.</figcaption>\n</figure>\n",
                     render_svg_chart(chart), spec.source, runs.size(), scenario_title(scenario),
                     escape_markup(runner), chart.points.back().href,
                     escape_markup(chart.points.back().label));
      ++charts_;
    }
    out("</div>\n");
  }

  std::string page_;
  std::vector<std::string>& warnings_;
  std::set<std::string> anchors_;
  std::size_t charts_ = 0;
};

}  // namespace

std::string render_page(const RunIndex& index, const SiteOptions& options,
                        std::vector<std::string>& warnings) {
  PageWriter writer(index, options, warnings);
  return writer.render();
}

SiteSummary write_site(const RunIndex& index, const SiteOptions& options,
                       const std::filesystem::path& out_dir) {
  SiteSummary summary;
  summary.warnings = index.warnings;
  PageWriter writer(index, options, summary.warnings);
  std::string html = writer.render();
  summary.page = out_dir / "index.html";
  write_file_durably(summary.page, html, {.durability = Durability::kDerived});
  std::string runner =
      options.badge_runner.empty() ? newest_runner_class(index) : options.badge_runner;
  write_badges(out_dir, render_badges(index, runner));
  summary.runs = index.runs.size();
  summary.runner_classes = index.runner_classes().size();
  summary.charts = writer.charts();
  return summary;
}

}  // namespace ernic::reports
