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
#include "common/version.h"
#include "markup.h"
#include "output_files.h"
#include "record_points.h"
#include "svg_chart.h"

namespace ernic::reports {
namespace {

using Out = std::back_insert_iterator<std::string>;

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

// Per-run state the page needs for the runs it shows.
struct ShownRun {
  std::size_t index = 0;  // into RunIndex::runs
  std::string anchor;
  std::optional<nlohmann::json> record;  // loaded for runs with an ernicctl part
};

class PageWriter {
 public:
  PageWriter(const RunIndex& index, const SiteOptions& options, std::vector<std::string>& warnings)
      : index_(index), options_(options), warnings_(warnings), out_(std::back_inserter(html_)) {}

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
    return std::move(html_);
  }

  std::size_t charts() const { return charts_; }

 private:
  void out(std::string_view text) { html_.append(text); }

  static std::string class_anchor(const std::string& name) { return "class-" + anchor_id(name); }

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
      if (entry.has_ernicctl) {
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
    for (const auto& spec : kSeriesSpecs) {
      render_series(name, spec, charted);
    }
    render_last_runs(name, shown);
    render_newest(name, shown);
    fmt::format_to(out_, "<h3 id=\"{}-details\">Run details</h3>\n", class_anchor(name));
    for (auto it = shown.rbegin(); it != shown.rend(); ++it) {
      render_details(*it);
    }
    out("</section>\n");
  }

  void render_series(const std::string& runner, const SeriesSpec& spec,
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
    std::string series_anchor = fmt::format("{}-{}", class_anchor(runner), series_key(spec.series));
    fmt::format_to(out_, "<h3 id=\"{}\">{} ({}, {} is better)</h3>\n<div class=\"charts\">\n",
                   series_anchor, spec.title, escape_markup(spec.unit),
                   spec.higher_better ? "higher" : "lower");
    for (auto size : sizes) {
      ChartSpec chart;
      chart.id = fmt::format("chart-{}-{}", anchor_id(runner), series_key(spec.series));
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
                     "<figure>\n{}<figcaption>{}; {} runs of <code>{}</code>, newest <a "
                     "href=\"{}\">{}</a>.</figcaption>\n</figure>\n",
                     render_svg_chart(chart), spec.source, runs.size(), escape_markup(runner),
                     chart.points.back().href, escape_markup(chart.points.back().label));
      ++charts_;
    }
    out("</div>\n");
  }

  static std::string value_at(const RunEntry& run, Series series, std::uint64_t size) {
    for (const auto& [s, value] : run.values(series)) {
      if (s == size) {
        return format_figure(value);
      }
    }
    return "\u2013";
  }

  void render_last_runs(const std::string& runner, const std::vector<ShownRun>& shown) {
    std::size_t count = std::min(options_.table_runs, shown.size());
    constexpr std::uint64_t kTracked[] = {4096, 65536, 1048576};
    fmt::format_to(out_,
                   "<h3 id=\"{}-last\">Last {} runs (newest first)</h3>\n<table>\n<tr><th "
                   "class=\"text\">run</th><th class=\"text\">commit</th><th "
                   "class=\"text\">generated</th><th class=\"text\">node</th><th "
                   "class=\"text\">scenario</th><th class=\"text\">status</th>",
                   class_anchor(runner), count);
    for (auto size : kTracked) {
      fmt::format_to(out_, "<th>send bw {}<br/>GB/s</th>", size_label(size));
    }
    for (auto size : kTracked) {
      fmt::format_to(out_, "<th>send lat {}<br/>\u00b5s</th>", size_label(size));
    }
    out("<th>TCP<br/>GB/s</th><th>NVMe-oF 4 KiB<br/>GB/s</th></tr>\n");
    for (std::size_t i = 0; i < count; ++i) {
      const auto& shown_run = shown[shown.size() - 1 - i];
      const auto& run = index_.runs[shown_run.index];
      std::string status = run.has_ernicctl ? run.status : "(rocm-ernic record)";
      fmt::format_to(out_,
                     "<tr><td class=\"text\"><a href=\"#{}\">{}</a></td><td "
                     "class=\"text\"><code>{}</code></td><td class=\"text\">{}</td><td "
                     "class=\"text\">{}</td><td class=\"text\">{}</td><td class=\"text{}\">{}</td>",
                     shown_run.anchor, escape_markup(run.run_id.empty() ? "?" : run.run_id),
                     escape_markup(run.sha), escape_markup(run.generated), escape_markup(run.node),
                     escape_markup(run.scenario), run.status == "failed" ? " failed" : "",
                     escape_markup(status));
      for (auto size : kTracked) {
        fmt::format_to(out_, "<td>{}</td>", value_at(run, Series::kBandwidth, size));
      }
      for (auto size : kTracked) {
        fmt::format_to(out_, "<td>{}</td>", value_at(run, Series::kLatency, size));
      }
      fmt::format_to(out_, "<td>{}</td><td>{}</td></tr>\n", value_at(run, Series::kTcp, 0),
                     value_at(run, Series::kNvmeof, 4096));
    }
    out("</table>\n");
  }

  // A table cell showing one point's median, linked to the point in the run's details.
  std::string point_cell(const ShownRun& run, const PointView* point, const std::string& metric,
                         bool use_p99_of_typical = false) {
    if (point == nullptr) {
      return "<td>\u2013</td>";
    }
    std::string href = fmt::format("#{}-p{}", run.anchor, point->index);
    if (point->status != "passed") {
      return fmt::format("<td class=\"failed\"><a href=\"{}\" title=\"{}\">{}</a></td>", href,
                         escape_markup(point->reason), escape_markup(point->status));
    }
    std::optional<double> value = metric_median(*point->json, metric);
    if (!value && use_p99_of_typical) {
      // perftest printed no 99th percentile column: the p99 over repetitions instead
      static const nlohmann::json::json_pointer kP99("/summary/lat_typical_us/p99");
      if (point->json->contains(kP99) && point->json->at(kP99).is_number()) {
        value = point->json->at(kP99).get<double>();
      }
    }
    return fmt::format("<td><a href=\"{}\">{}</a></td>", href, format_optional(value));
  }

  void render_newest(const std::string& runner, const std::vector<ShownRun>& shown) {
    const ShownRun* newest = nullptr;
    for (auto it = shown.rbegin(); it != shown.rend(); ++it) {
      if (it->record && !points_of(*it->record).empty()) {
        newest = &*it;
        break;
      }
    }
    fmt::format_to(out_, "<h3 id=\"{}-reference\">Reference tables of the newest run</h3>\n",
                   class_anchor(runner));
    if (newest == nullptr) {
      out("<p class=\"note\">No run of this class recorded its points (rocm-ernic records keep "
          "only the tracked medians).</p>\n");
      return;
    }
    const auto& run = index_.runs[newest->index];
    const auto& record = *newest->record;
    const auto& part = record["ernicctl"];
    fmt::format_to(out_,
                   "<p>Run <a href=\"#{}\">{}</a>, commit <code>{}</code>, {}, scenario "
                   "<code>{}</code>, accelerator <code>{}</code>.{}</p>\n",
                   newest->anchor, escape_markup(run.run_id), escape_markup(run.sha),
                   escape_markup(run.generated), escape_markup(run.scenario),
                   escape_markup(run.accelerator.empty() ? "unknown" : run.accelerator),
                   part.value("functional_only", false)
                       ? " <strong>Functional only (TCG): these figures show the pipeline works, "
                         "not how fast it is.</strong>"
                       : "");
    if (&*shown.rbegin() != newest) {
      out("<p class=\"note\">Newer runs of this class have no points; these tables are from the "
          "newest run that has.</p>\n");
    }
    auto points = points_of(record);
    render_verb_table(*newest, points, PointKind::kBandwidth,
                      "Bandwidth (median over repetitions, GB/s)",
                      {{"bw_avg_GBs", "avg"}, {"bw_peak_GBs", "peak"}});
    render_verb_table(*newest, points, PointKind::kLatency,
                      "Latency (median over repetitions, \u00b5s)",
                      {{"lat_typical_us", "typical"}, {"lat_p99_us", "p99"}});
    render_other_points(*newest, points);
    render_repeatability(*newest, points);
    render_ab_pairs(*newest, record, points);
    render_t_init(*newest, record);
  }

  void render_verb_table(const ShownRun& run, const std::vector<PointView>& points, PointKind kind,
                         const char* title,
                         const std::vector<std::pair<std::string, std::string>>& metrics) {
    std::set<std::uint64_t> sizes;
    std::map<std::pair<std::string, std::uint64_t>, const PointView*> by_verb_size;
    for (const auto& point : points) {
      if (point.kind == kind && point.size && !point.verb.empty()) {
        sizes.insert(*point.size);
        by_verb_size.emplace(std::make_pair(point.verb, *point.size), &point);
      }
    }
    if (sizes.empty()) {
      return;
    }
    fmt::format_to(out_, "<h4>{}</h4>\n<table>\n<tr><th class=\"text\" rowspan=\"2\">size</th>",
                   title);
    const char* verbs[] = {"send", "write", "read"};
    for (const char* verb : verbs) {
      fmt::format_to(out_, "<th colspan=\"{}\">{}</th>", metrics.size(), verb);
    }
    out("</tr>\n<tr>");
    for (std::size_t v = 0; v < 3; ++v) {
      for (const auto& [metric, label] : metrics) {
        fmt::format_to(out_, "<th>{}</th>", label);
      }
    }
    out("</tr>\n");
    for (auto size : sizes) {
      fmt::format_to(out_, "<tr><td class=\"text\">{}</td>", size_label(size));
      for (const char* verb : verbs) {
        auto it = by_verb_size.find({verb, size});
        const PointView* point = it == by_verb_size.end() ? nullptr : it->second;
        for (const auto& [metric, label] : metrics) {
          out(point_cell(run, point, metric, metric == "lat_p99_us"));
        }
      }
      out("</tr>\n");
    }
    out("</table>\n");
  }

  void render_other_points(const ShownRun& run, const std::vector<PointView>& points) {
    const auto& entry = index_.runs[run.index];
    bool any = entry.badge(Badge::kTcp).has_value();
    for (const auto& point : points) {
      any = any || point.kind == PointKind::kTcp || point.kind == PointKind::kNvmeof ||
            point.kind == PointKind::kOther;
    }
    if (!any) {
      return;
    }
    out("<h4>TCP and other points</h4>\n");
    if (auto tcp = entry.badge(Badge::kTcp)) {
      fmt::format_to(out_, "<p>TCP figure (badges.tcp_bw_GBs): <strong>{} GB/s</strong></p>\n",
                     format_figure(*tcp));
    }
    out("<table>\n<tr><th class=\"text\">point</th><th class=\"text\">metric</th><th>median</th>"
        "<th class=\"text\">unit</th></tr>\n");
    for (const auto& point : points) {
      if (point.kind == PointKind::kBandwidth || point.kind == PointKind::kLatency) {
        continue;
      }
      std::string metric = primary_metric(*point.json);
      fmt::format_to(out_,
                     "<tr><td class=\"text\">{}</td><td class=\"text\">{}</td>{}<td "
                     "class=\"text\">{}</td></tr>\n",
                     escape_markup(point.id), escape_markup(metric),
                     point_cell(run, &point, metric),
                     escape_markup(metric_unit(*point.json, metric)));
    }
    out("</table>\n");
  }

  void render_repeatability(const ShownRun& run, const std::vector<PointView>& points) {
    std::vector<std::pair<const PointView*, std::string>> rows;
    for (const auto& point : points) {
      std::string metric = primary_metric(*point.json);
      if (!metric.empty() && metric_samples(*point.json, metric).size() >= 2) {
        rows.emplace_back(&point, metric);
      }
    }
    if (rows.empty()) {
      return;
    }
    std::stable_sort(rows.begin(), rows.end(),
                     [](const auto& a, const auto& b) { return a.first->verb < b.first->verb; });
    out("<h4>Repeatability over repetitions</h4>\n<table>\n<tr><th class=\"text\">verb</th><th "
        "class=\"text\">point</th><th class=\"text\">metric</th><th>n</th><th>min</th><th>max</th>"
        "<th>range</th><th>mean</th><th>relative spread</th></tr>\n");
    for (const auto& [point, metric] : rows) {
      auto samples = metric_samples(*point->json, metric);
      auto [lo, hi] = std::minmax_element(samples.begin(), samples.end());
      double mean = 0;
      for (double v : samples) {
        mean += v;
      }
      mean /= static_cast<double>(samples.size());
      double range = *hi - *lo;
      fmt::format_to(
          out_,
          "<tr><td class=\"text\">{}</td><td class=\"text\"><a href=\"#{}-p{}\">{}</a></td><td "
          "class=\"text\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</"
          "td></tr>\n",
          escape_markup(point->verb.empty() ? "\u2013" : point->verb), run.anchor, point->index,
          escape_markup(point->id), escape_markup(metric), samples.size(), format_figure(*lo),
          format_figure(*hi), format_figure(range), format_figure(mean),
          mean != 0 ? format_figure(100 * range / std::fabs(mean), 3) + " %" : "\u2013");
    }
    out("</table>\n<p class=\"note\">Relative spread = range / mean. Differences between runs "
        "smaller than the spread are noise.</p>\n");
  }

  void render_ab_pairs(const ShownRun& run, const nlohmann::json& record,
                       const std::vector<PointView>& points) {
    const auto& pairs = record["ernicctl"].value("ab_pairs", nlohmann::json::array());
    if (!pairs.is_array() || pairs.empty()) {
      return;
    }
    auto find = [&](const std::string& id) -> const PointView* {
      for (const auto& point : points) {
        if (point.id == id) {
          return &point;
        }
      }
      return nullptr;
    };
    out("<h4>A/B ratios</h4>\n<table>\n<tr><th class=\"text\">pair</th><th "
        "class=\"text\">metric</th>"
        "<th class=\"text\">A (baseline)</th><th class=\"text\">B</th><th>median A</th><th>median "
        "B</th>"
        "<th>B/A</th><th>spread of B/A</th><th>n</th></tr>\n");
    for (const auto& pair : pairs) {
      std::string name = json_text(pair, "name");
      std::string metric = json_text(pair, "metric");
      const PointView* a = find(json_text(pair, "a"));
      const PointView* b = find(json_text(pair, "b"));
      std::string ratio = "\u2013";
      std::string spread = "\u2013";
      std::size_t n = 0;
      if (a && b) {
        auto sa = metric_samples(*a->json, metric);
        auto sb = metric_samples(*b->json, metric);
        auto ma = metric_median(*a->json, metric);
        auto mb = metric_median(*b->json, metric);
        if (ma && mb && *ma != 0) {
          ratio = format_figure(*mb / *ma, 3);
        }
        std::vector<double> ratios;
        if (!sa.empty() && sa.size() == sb.size()) {
          // repetitions were interleaved A, B, A, B: pair them by repetition
          for (std::size_t i = 0; i < sa.size(); ++i) {
            if (sa[i] != 0) {
              ratios.push_back(sb[i] / sa[i]);
            }
          }
        }
        if (!ratios.empty()) {
          auto [lo, hi] = std::minmax_element(ratios.begin(), ratios.end());
          spread = fmt::format("{} \u2013 {}", format_figure(*lo, 3), format_figure(*hi, 3));
          n = ratios.size();
        }
      }
      fmt::format_to(
          out_,
          "<tr><td class=\"text\">{}</td><td class=\"text\">{}</td><td class=\"text\">{}</td>"
          "<td class=\"text\">{}</td>{}{}<td><strong>{}</strong></td><td>{}</td><td>{}</td></tr>\n",
          escape_markup(name), escape_markup(metric),
          a ? fmt::format("<a href=\"#{}-p{}\">{}</a>", run.anchor, a->index, escape_markup(a->id))
            : escape_markup(json_text(pair, "a")) + " (missing)",
          b ? fmt::format("<a href=\"#{}-p{}\">{}</a>", run.anchor, b->index, escape_markup(b->id))
            : escape_markup(json_text(pair, "b")) + " (missing)",
          point_cell(run, a, metric), point_cell(run, b, metric), ratio, spread, n);
    }
    out("</table>\n<p class=\"note\">B/A from medians; the spread is the range of the "
        "per-repetition "
        "ratios (A and B measured side by side in the same run).</p>\n");
  }

  void render_t_init(const ShownRun& run, const nlohmann::json& record) {
    const auto& hosts = record["ernicctl"].value("hosts", nlohmann::json::array());
    bool any = false;
    for (const auto& host : hosts) {
      any = any || (host.is_object() && host.contains("t_init_s") && host["t_init_s"].is_number());
    }
    if (!any) {
      return;
    }
    fmt::format_to(out_,
                   "<h4>T_init per guest (boot to SSH to device ready)</h4>\n<p class=\"note\">Run "
                   "<a href=\"#{}\">{}</a>.</p>\n<table>\n<tr><th class=\"text\">host</th><th "
                   "class=\"text\">provider</th><th class=\"text\">address</th><th>vCPUs</th><th>"
                   "T_init (s)</th></tr>\n",
                   run.anchor, escape_markup(index_.runs[run.index].run_id));
    for (const auto& host : hosts) {
      if (!host.is_object()) {
        continue;
      }
      std::optional<double> t_init;
      if (host.contains("t_init_s") && host["t_init_s"].is_number()) {
        t_init = host["t_init_s"].get<double>();
      }
      fmt::format_to(out_,
                     "<tr><td class=\"text\">{}</td><td class=\"text\">{}</td><td "
                     "class=\"text\">{}</td><td>{}</td><td>{}</td></tr>\n",
                     escape_markup(json_text(host, "name")),
                     escape_markup(json_text(host, "provider")),
                     escape_markup(json_text(host, "address")),
                     escape_markup(json_text(host, "vcpus")), format_optional(t_init));
    }
    out("</table>\n");
  }

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
                   escape_markup(run.has_ernicctl ? run.status : "rocm-ernic record"));
    definition("run id", run.run_id);
    definition("commit", run.sha);
    definition("generated", run.generated);
    definition("node", run.node);
    definition("runner class", run.runner);
    definition("recorded in", fmt::format("{}:{}", index_.sources[run.source].string(), run.line));
    if (!shown.record) {
      out("</dl>\n<p class=\"note\">");
      out(run.has_ernicctl ? "The record could not be read again."
                           : "A rocm-ernic record: it keeps the commit, the node and the tracked "
                             "medians only; commands, tool versions and the accelerator were not "
                             "recorded.");
      out("</p>\n</details>\n");
      return;
    }
    const auto& part = (*shown.record)["ernicctl"];
    const auto& scenario = part.value("scenario", nlohmann::json::object());
    definition("scenario", json_text(scenario, "name"));
    definition("scenario file", json_text(scenario, "path"));
    definition("scenario sha256", json_text(scenario, "sha256"));
    definition("status", json_text(part, "status"));
    definition("started", json_text(part, "started"));
    definition("duration (s)", json_text(part, "duration_s"));
    definition("ernicctl",
               fmt::format("{} ({})", json_text(part, "version"), json_text(part, "git_sha")));
    definition("accelerator",
               json_text(part, "accelerator") +
                   (part.value("functional_only", false) ? " (functional only)" : ""));
    definition("run directory", json_text(part, "run_dir"));
    const auto& environment = part.value("environment", nlohmann::json::object());
    if (environment.is_object()) {
      for (const auto& [key, value] : environment.items()) {
        definition(key.c_str(), value.is_string() ? value.get<std::string>() : value.dump());
      }
    }
    const auto& tools = part.value("tools", nlohmann::json::object());
    if (tools.is_object()) {
      for (const auto& [key, value] : tools.items()) {
        definition(("version of " + key).c_str(),
                   value.is_string() ? value.get<std::string>() : value.dump());
      }
    }
    definition("emulator", json_text(part, "emulator"));
    definition("hosts", json_text(part, "hosts"));
    out("</dl>\n");
    auto points = points_of(*shown.record);
    if (!points.empty()) {
      out("<table>\n<tr><th class=\"text\">point</th><th class=\"text\">status</th><th>reps</th>"
          "<th class=\"text\">medians</th><th class=\"text\">commands</th><th "
          "class=\"text\">log</th></tr>\n");
      for (const auto& point : points) {
        std::string medians;
        for (const auto& metric : metric_names(*point.json)) {
          if (auto value = metric_median(*point.json, metric)) {
            medians +=
                fmt::format("{}{} = {} {}", medians.empty() ? "" : "<br/>", escape_markup(metric),
                            format_figure(*value), escape_markup(metric_unit(*point.json, metric)));
          }
        }
        std::string commands;
        const auto& command_map = point.json->value("commands", nlohmann::json::object());
        if (command_map.is_object()) {
          for (const auto& [role, command] : command_map.items()) {
            commands += fmt::format(
                "{}{}: <code>{}</code>", commands.empty() ? "" : "<br/>", escape_markup(role),
                escape_markup(command.is_string() ? command.get<std::string>() : command.dump()));
          }
        }
        std::string status = escape_markup(point.status);
        if (!point.reason.empty()) {
          status += ": " + escape_markup(point.reason);
        }
        fmt::format_to(
            out_,
            "<tr id=\"{}-p{}\"><td class=\"text\">{}</td><td class=\"text{}\">{}</td><td>{}</td>"
            "<td class=\"text\">{}</td><td class=\"text\">{}</td><td "
            "class=\"text\"><code>{}</code></td></tr>\n",
            shown.anchor, point.index, escape_markup(point.id),
            point.status == "passed" ? "" : " failed", status,
            escape_markup(json_text(*point.json, "repetitions")), medians, commands,
            escape_markup(log_paths(*point.json)));
      }
      out("</table>\n");
    }
    out("</details>\n");
  }

  const RunIndex& index_;
  const SiteOptions& options_;
  std::vector<std::string>& warnings_;
  std::string html_;
  Out out_;
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
  write_file_atomically(summary.page, html);
  std::string runner =
      options.badge_runner.empty() ? newest_runner_class(index) : options.badge_runner;
  write_badges(out_dir, render_badges(index, runner));
  summary.runs = index.runs.size();
  summary.runner_classes = index.runner_classes().size();
  summary.charts = writer.charts();
  return summary;
}

}  // namespace ernic::reports
