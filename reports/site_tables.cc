// The reference tables of a runner class's section: the last runs, and the newest run's
// bandwidth, latency, TCP, repeatability, A/B and T_init tables, every cell linked to its point.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "history/statistics.h"
#include "markup.h"
#include "record_points.h"
#include "site_parts.h"

namespace ernic::reports {
namespace {

class RunTables : PagePart {
 public:
  using PagePart::PagePart;

  void render(const std::string& runner, const std::vector<ShownRun>& shown) {
    render_last_runs(runner, shown);
    render_newest(runner, shown);
  }

 private:
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
                   "<h3 id=\"{}-last\">Last {} runs (newest first)</h3>\n<p class=\"note\">The "
                   "trend figures of {}.</p>\n<table data-rung=\"{}\">\n<tr><th "
                   "class=\"text\">run</th><th class=\"text\">commit</th><th "
                   "class=\"text\">generated</th><th class=\"text\">node</th><th "
                   "class=\"text\">scenario</th><th class=\"text\">status</th>",
                   class_anchor(runner), count, rung_label(Rung::kExecution),
                   rung_number(Rung::kExecution));
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
      std::string status = run.ernicctl ? run.run_status() : "(rocm-ernic record)";
      fmt::format_to(out_,
                     "<tr><td class=\"text\"><a href=\"#{}\">{}</a></td><td "
                     "class=\"text\"><code>{}</code></td><td class=\"text\">{}</td><td "
                     "class=\"text\">{}</td><td class=\"text\">{}</td><td class=\"text{}\">{}</td>",
                     shown_run.anchor, escape_markup(run.run_id.empty() ? "?" : run.run_id),
                     escape_markup(run.sha), escape_markup(run.generated), escape_markup(run.node),
                     escape_markup(run.scenario_name()),
                     run.run_status() == "failed" ? " failed" : "", escape_markup(status));
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
    if (point->status() != "passed") {
      return fmt::format(
          "<td class=\"failed\" data-rung=\"{}\"><a href=\"{}\" title=\"{}\">{}</a></td>",
          rung_number(point_rung(*point->record)), href, escape_markup(point->reason()),
          escape_markup(point->status()));
    }
    std::optional<double> value = point->record->median(metric);
    if (!value && use_p99_of_typical) {
      // perftest printed no 99th percentile column: the p99 over repetitions instead
      const auto& summary = point->record->summary;
      if (auto typical = summary.find("lat_typical_us"); typical != summary.end()) {
        value = typical->second.p99;
      }
    }
    return fmt::format("<td data-rung=\"{}\"><a href=\"{}\">{}</a></td>",
                       rung_number(metric_rung(*point->record, metric)), href,
                       format_optional(value));
  }

  void render_newest(const std::string& runner, const std::vector<ShownRun>& shown) {
    const ShownRun* newest = nullptr;
    for (auto it = shown.rbegin(); it != shown.rend(); ++it) {
      if (it->record && !it->record->points().empty()) {
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
    const auto& part = *record.ernicctl;
    fmt::format_to(out_,
                   "<p>Run <a href=\"#{}\">{}</a>, commit <code>{}</code>, {}, scenario "
                   "<code>{}</code>, accelerator <code>{}</code>.{}</p>\n",
                   newest->anchor, escape_markup(run.run_id), escape_markup(run.sha),
                   escape_markup(run.generated), escape_markup(run.scenario_name()),
                   escape_markup(run.accelerator().empty() ? "unknown" : run.accelerator()),
                   part.functional_only
                       ? " <strong>Functional only (TCG): these figures show the pipeline works, "
                         "not how fast it is.</strong>"
                       : "");
    if (&*shown.rbegin() != newest) {
      out("<p class=\"note\">Newer runs of this class have no points; these tables are from the "
          "newest run that has.</p>\n");
    }
    out("<p class=\"note\">Figures are grouped by their rung of the evaluation ladder and "
        "claimed per rung, never across: no table holds figures of two rungs.</p>\n");
    auto points = points_of(record);
    render_t_init(runner, *newest, record);
    for (Rung rung : kAllRungs) {
      std::vector<PointView> of_rung;
      for (const auto& point : points) {
        if (rung != kTInitRung && shows_in_rung(*point.record, rung)) {
          of_rung.push_back(point);
        }
      }
      bool groups = rung == Rung::kMultiTenant && has_group_fairness(part);
      if (of_rung.empty() && !groups) {
        continue;
      }
      rung_heading(runner, rung);
      if (groups) {
        render_groups(part);
      }
      if (rung == Rung::kExecution) {
        render_verb_table(*newest, of_rung, PointKind::kBandwidth,
                          "Bandwidth (median over repetitions, GB/s)",
                          {{"bw_avg_GBs", "avg"}, {"bw_peak_GBs", "peak"}});
        render_verb_table(*newest, of_rung, PointKind::kLatency,
                          "Latency (median over repetitions, \u00b5s)",
                          {{"lat_typical_us", "typical"}, {"lat_p99_us", "p99"}});
        render_other_points(*newest, of_rung);
      } else if (!of_rung.empty()) {
        render_figures(*newest, of_rung, rung);
      }
      render_repeatability(*newest, of_rung, rung);
      render_ab_pairs(*newest, record, points, rung);
    }
    render_ab_pairs_across_rungs(*newest, record, points);
  }

  void rung_heading(const std::string& runner, Rung rung) {
    fmt::format_to(out_, "<h4 class=\"rung\" id=\"{}-rung-{}\">{}</h4>\n", class_anchor(runner),
                   rung_number(rung), escape_markup(rung_label(rung)));
  }

  static bool has_group_fairness(const ErnicctlPart& part) {
    return std::any_of(part.groups.begin(), part.groups.end(),
                       [](const GroupRecord& group) { return !group.fairness.empty(); });
  }

  // Jain's index over each concurrent group's members that measure the same throughput.
  void render_groups(const ErnicctlPart& part) {
    fmt::format_to(out_,
                   "<h5>Concurrent groups: Jain's index over the members measuring the same "
                   "throughput</h5>\n{}<tr><th class=\"text\">group</th><th "
                   "class=\"text\">members covered</th><th class=\"text\">metric</th><th>J "
                   "(median)</th><th>min share</th><th>max share</th><th>repetitions</th></tr>\n",
                   table_open(Rung::kMultiTenant));
    for (const auto& group : part.groups) {
      for (const auto& fairness : group.fairness) {
        std::string members;
        for (const auto& member : fairness.members) {
          members += (members.empty() ? "" : ", ") + escape_markup(member);
        }
        int rung = rung_number(Rung::kMultiTenant);
        fmt::format_to(out_,
                       "<tr><td class=\"text\">{}</td><td class=\"text\">{}</td><td "
                       "class=\"text\">{} ({})</td><td data-rung=\"{}\">{}</td><td "
                       "data-rung=\"{}\">{}</td><td data-rung=\"{}\">{}</td><td>{}</td></tr>\n",
                       escape_markup(group.name), members, escape_markup(fairness.metric),
                       escape_markup(fairness.unit), rung, format_figure(fairness.jain.median),
                       rung, format_figure(fairness.min_share), rung,
                       format_figure(fairness.max_share), fairness.jain.n);
      }
    }
    out("</table>\n");
  }

  static std::string table_open(Rung rung) {
    return fmt::format("<table data-rung=\"{}\">\n", rung_number(rung));
  }

  // point | metric | median | unit
  std::string figure_row(const ShownRun& run, const PointView& point, const std::string& metric) {
    return fmt::format(
        "<tr><td class=\"text\">{}</td><td class=\"text\">{}</td>{}<td "
        "class=\"text\">{}</td></tr>\n",
        escape_markup(point.id()), escape_markup(metric_label(metric)),
        point_cell(run, &point, metric), escape_markup(metric_unit(*point.record, metric)));
  }

  // A rung's figures one per row: point, metric, median, unit (rungs 2, 4 and 5, whose points
  // do not fill the verb and size grid).
  void render_figures(const ShownRun& run, const std::vector<PointView>& points, Rung rung) {
    fmt::format_to(
        out_,
        "<h5>Figures (median over repetitions)</h5>\n{}<tr><th class=\"text\">point</th>"
        "<th class=\"text\">metric</th><th>median</th><th class=\"text\">unit</th></tr>\n",
        table_open(rung));
    for (const auto& point : points) {
      auto metrics = metrics_of_rung(*point.record, rung);
      if (metrics.empty()) {
        metrics.push_back(primary_metric(*point.record));  // a failed point: its status
      }
      for (const auto& metric : metrics) {
        out(figure_row(run, point, metric));
      }
    }
    out("</table>\n");
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
    fmt::format_to(out_, "<h5>{}</h5>\n{}<tr><th class=\"text\" rowspan=\"2\">size</th>", title,
                   table_open(Rung::kExecution));
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
    out("<h5>TCP and other points</h5>\n");
    if (auto tcp = entry.badge(Badge::kTcp)) {
      fmt::format_to(out_, "<p>TCP figure (badges.tcp_bw_GBs): <strong>{} GB/s</strong></p>\n",
                     format_figure(*tcp));
    }
    out(table_open(Rung::kExecution));
    out("<tr><th class=\"text\">point</th><th class=\"text\">metric</th><th>median</th>"
        "<th class=\"text\">unit</th></tr>\n");
    for (const auto& point : points) {
      if (point.kind == PointKind::kBandwidth || point.kind == PointKind::kLatency) {
        continue;
      }
      out(figure_row(run, point, primary_metric(*point.record)));
    }
    out("</table>\n");
  }

  void render_repeatability(const ShownRun& run, const std::vector<PointView>& points, Rung rung) {
    std::vector<std::pair<const PointView*, std::string>> rows;
    for (const auto& point : points) {
      std::string metric = primary_metric(*point.record);
      if (!metric.empty() && metric_rung(*point.record, metric) == rung &&
          point.record->values(metric).size() >= 2) {
        rows.emplace_back(&point, metric);
      }
    }
    if (rows.empty()) {
      return;
    }
    std::stable_sort(rows.begin(), rows.end(),
                     [](const auto& a, const auto& b) { return a.first->verb < b.first->verb; });
    out("<h5>Repeatability over repetitions</h5>\n");
    out(table_open(rung));
    out("<tr><th class=\"text\">verb</th><th "
        "class=\"text\">point</th><th class=\"text\">metric</th><th>n</th><th>min</th><th>max</th>"
        "<th>range</th><th>mean</th><th>relative spread</th></tr>\n");
    for (const auto& [point, metric] : rows) {
      auto samples = point->record->values(metric);
      auto stats = *summarize(samples);
      double range = stats.max - stats.min;
      fmt::format_to(
          out_,
          "<tr data-rung=\"{}\"><td class=\"text\">{}</td><td class=\"text\"><a "
          "href=\"#{}-p{}\">{}</a></td><td "
          "class=\"text\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</"
          "td></tr>\n",
          rung_number(metric_rung(*point->record, metric)),
          escape_markup(point->verb.empty() ? "\u2013" : point->verb), run.anchor, point->index,
          escape_markup(point->id()), escape_markup(metric), samples.size(),
          format_figure(stats.min), format_figure(stats.max), format_figure(range),
          format_figure(stats.mean),
          stats.mean != 0 ? format_figure(100 * range / std::fabs(stats.mean), 3) + " %"
                          : "\u2013");
    }
    out("</table>\n<p class=\"note\">Relative spread = range / mean. Differences between runs "
        "smaller than the spread are noise.</p>\n");
  }

  // A pair's points; nullptr for one the run does not have.
  static std::pair<const PointView*, const PointView*> pair_points(
      const AbPairRecord& pair, const std::vector<PointView>& points) {
    auto find = [&](const std::string& id) -> const PointView* {
      for (const auto& point : points) {
        if (point.id() == id) {
          return &point;
        }
      }
      return nullptr;
    };
    return {find(pair.a), find(pair.b)};
  }

  // The rung of a pair's figures; nullopt when A and B are of different rungs. A pair with
  // neither point is listed with the execution rung's.
  static std::optional<Rung> pair_rung(const AbPairRecord& pair,
                                       const std::vector<PointView>& points) {
    auto [a, b] = pair_points(pair, points);
    std::optional<Rung> rung_a =
        a ? std::optional(metric_rung(*a->record, pair.metric)) : std::nullopt;
    std::optional<Rung> rung_b =
        b ? std::optional(metric_rung(*b->record, pair.metric)) : std::nullopt;
    if (rung_a && rung_b && *rung_a != *rung_b) {
      return std::nullopt;
    }
    return rung_a.value_or(rung_b.value_or(Rung::kExecution));
  }

  std::string point_link(const ShownRun& run, const PointView* point, const std::string& id) {
    return point ? fmt::format("<a href=\"#{}-p{}\">{}</a>", run.anchor, point->index,
                               escape_markup(point->id()))
                 : escape_markup(id) + " (missing)";
  }

  struct PairRatio {
    std::string ratio = "\u2013";
    std::string spread = "\u2013";
    std::size_t n = 0;
  };

  static PairRatio pair_ratio(const PointView* a, const PointView* b, const std::string& metric) {
    PairRatio out;
    if (!a || !b) {
      return out;
    }
    auto sa = a->record->values(metric);
    auto sb = b->record->values(metric);
    auto ma = a->record->median(metric);
    auto mb = b->record->median(metric);
    if (ma && mb && *ma != 0) {
      out.ratio = format_figure(*mb / *ma, 3);
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
      out.spread = fmt::format("{} \u2013 {}", format_figure(*lo, 3), format_figure(*hi, 3));
      out.n = ratios.size();
    }
    return out;
  }

  // The pairs whose A and B are both of `rung`.
  void render_ab_pairs(const ShownRun& run, const HistoryRecord& record,
                       const std::vector<PointView>& points, Rung rung) {
    std::vector<const AbPairRecord*> pairs;
    for (const auto& pair : record.ernicctl->ab_pairs) {
      if (pair_rung(pair, points) == rung) {
        pairs.push_back(&pair);
      }
    }
    if (pairs.empty()) {
      return;
    }
    out("<h5>A/B ratios</h5>\n");
    out(table_open(rung));
    out("<tr><th class=\"text\">pair</th><th class=\"text\">metric</th><th "
        "class=\"text\">A (baseline)</th><th class=\"text\">B</th><th>median A</th><th>median "
        "B</th><th>B/A</th><th>spread of B/A</th><th>n</th></tr>\n");
    for (const auto* pair : pairs) {
      auto [a, b] = pair_points(*pair, points);
      PairRatio ratio = pair_ratio(a, b, pair->metric);
      fmt::format_to(
          out_,
          "<tr><td class=\"text\">{}</td><td class=\"text\">{}</td><td class=\"text\">{}</td>"
          "<td class=\"text\">{}</td>{}{}<td><strong>{}</strong></td><td>{}</td><td>{}</td></tr>\n",
          escape_markup(pair->name), escape_markup(pair->metric), point_link(run, a, pair->a),
          point_link(run, b, pair->b), point_cell(run, a, pair->metric),
          point_cell(run, b, pair->metric), ratio.ratio, ratio.spread, ratio.n);
    }
    out("</table>\n<p class=\"note\">B/A from medians; the spread is the range of the "
        "per-repetition ratios (A and B measured side by side in the same run).</p>\n");
  }

  // Pairs whose A and B are of different rungs (a latency point alone against the same point
  // beside bulk tenants): listed, never tabled with either rung's figures.
  void render_ab_pairs_across_rungs(const ShownRun& run, const HistoryRecord& record,
                                    const std::vector<PointView>& points) {
    std::string items;
    for (const auto& pair : record.ernicctl->ab_pairs) {
      if (pair_rung(pair, points)) {
        continue;
      }
      auto [a, b] = pair_points(pair, points);
      auto figure = [&](const PointView* point) {
        return fmt::format("{} ({}) {} {}", point_link(run, point, ""),
                           escape_markup(rung_label(metric_rung(*point->record, pair.metric))),
                           format_optional(point->record->median(pair.metric)),
                           escape_markup(metric_unit(*point->record, pair.metric)));
      };
      items += fmt::format("<li>{}, {}: A {}; B {}; B/A <strong>{}</strong></li>\n",
                           escape_markup(pair.name), escape_markup(pair.metric), figure(a),
                           figure(b), pair_ratio(a, b, pair.metric).ratio);
    }
    if (!items.empty()) {
      out("<h4 class=\"rung\">A/B pairs across rungs</h4>\n<p class=\"note\">A and B are of "
          "different rungs: the ratio is the cost of the step up the ladder, not a figure of "
          "either rung.</p>\n<ul>\n");
      out(items);
      out("</ul>\n");
    }
  }

  void render_t_init(const std::string& runner, const ShownRun& run, const HistoryRecord& record) {
    const auto& hosts = record.ernicctl->hosts;
    bool any = false;
    for (const auto& host : hosts) {
      any = any || host.t_init_s.has_value();
    }
    if (!any) {
      return;
    }
    rung_heading(runner, kTInitRung);
    fmt::format_to(out_,
                   "<h5>T_init per guest (boot to SSH to device ready)</h5>\n<p class=\"note\">Run "
                   "<a href=\"#{}\">{}</a>.</p>\n{}<tr><th class=\"text\">host</th><th "
                   "class=\"text\">provider</th><th class=\"text\">address</th><th>vCPUs</th><th>"
                   "T_init (s)</th></tr>\n",
                   run.anchor, escape_markup(index_.runs[run.index].run_id),
                   table_open(kTInitRung));
    for (const auto& host : hosts) {
      fmt::format_to(out_,
                     "<tr><td class=\"text\">{}</td><td class=\"text\">{}</td><td "
                     "class=\"text\">{}</td><td>{}</td><td data-rung=\"{}\">{}</td></tr>\n",
                     escape_markup(host.name), escape_markup(host.provider),
                     escape_markup(host.address),
                     host.vcpus ? format_figure(*host.vcpus) : std::string(),
                     rung_number(kTInitRung), format_optional(host.t_init_s));
    }
    out("</table>\n");
  }
};

}  // namespace

void render_run_tables(const RunIndex& index, const SiteOptions& options, std::string& html,
                       const std::string& runner, const std::vector<ShownRun>& shown) {
  RunTables(index, options, html).render(runner, shown);
}

}  // namespace ernic::reports
