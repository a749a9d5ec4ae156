#pragma once

#include <optional>
#include <string>
#include <vector>

#include "history/rung.h"

namespace ernic::reports {

// One run on a trend chart's x axis.
struct ChartPoint {
  std::string label;            // the commit sha, shown under the axis
  std::optional<double> value;  // a gap in the line when absent
  std::string href;             // where the point links: the run's details; empty: no link
  std::string tooltip;          // the point's <title>
};

// A single-series line chart: one metric at one size for one runner class, so it has exactly
// one y scale and one unit.
struct ChartSpec {
  std::string id;         // unique in the page
  std::string title;      // "Send bandwidth, 1 MiB"
  std::string unit;       // "GB/s", also used for the newest-value label
  std::string y_label;    // "GB/s, higher is better"
  std::string x_label;    // "runs, oldest to newest (commit)"
  std::string css_class;  // picks the series colour from the page's stylesheet
  // The rung of every figure on the chart (a chart never mixes rungs): its data-rung.
  Rung rung = Rung::kExecution;
  std::vector<ChartPoint> points;
};

// Inline SVG (a standalone, well-formed XML document fragment with its own xmlns): grid lines
// and tick labels on a zero-based y scale rounded up to a readable step, points linked to their
// runs, the newest value written beside the newest point. No script.
std::string render_svg_chart(const ChartSpec& spec);

// The tick step and top of the y scale for values up to `max_value` (tests check the rounding).
struct YScale {
  double top = 1;
  double step = 0.25;
};
YScale y_scale_for(double max_value);

}  // namespace ernic::reports
