#include "svg_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "markup.h"

namespace ernic::reports {
namespace {

constexpr double kWidth = 360;
constexpr double kHeight = 230;
constexpr double kLeft = 62;
constexpr double kRight = 18;
constexpr double kTop = 30;
constexpr double kBottom = 58;
constexpr double kPlotWidth = kWidth - kLeft - kRight;
constexpr double kPlotHeight = kHeight - kTop - kBottom;
constexpr std::size_t kMaxXLabels = 4;

}  // namespace

YScale y_scale_for(double max_value) {
  if (!(max_value > 0) || !std::isfinite(max_value)) {
    return {};
  }
  double raw_step = max_value * 1.08 / 4;
  double magnitude = std::pow(10.0, std::floor(std::log10(raw_step)));
  double step = magnitude * 10;
  for (double multiple : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    if (multiple * magnitude >= raw_step) {
      step = multiple * magnitude;
      break;
    }
  }
  double top = std::ceil(max_value * 1.08 / step) * step;
  return {top, step};
}

namespace {

// Where values and point indexes land in the plot rectangle.
struct PlotArea {
  std::size_t n;
  YScale scale;

  double x_of(std::size_t i) const {
    return kLeft + (n <= 1 ? kPlotWidth / 2
                           : kPlotWidth * static_cast<double>(i) / static_cast<double>(n - 1));
  }
  double y_of(double v) const {
    double clamped = std::clamp(v, 0.0, scale.top);
    return kTop + kPlotHeight * (1 - clamped / scale.top);
  }
};

bool plottable(const ChartPoint& point) {
  return point.value && std::isfinite(*point.value);
}

void append_y_axis(std::string& out, const ChartSpec& spec, const PlotArea& plot) {
  int ticks = static_cast<int>(std::lround(plot.scale.top / plot.scale.step));
  for (int k = 0; k <= ticks; ++k) {
    double value = plot.scale.step * k;
    double y = plot.y_of(value);
    out += fmt::format(
        "<line class=\"grid\" x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\"/>"
        "<text class=\"tick\" x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n",
        kLeft, y, kLeft + kPlotWidth, y, kLeft - 6, y + 4, format_figure(value, 3));
  }
  out += fmt::format(
      "<text class=\"axis-label\" transform=\"translate(14 {:.1f}) rotate(-90)\" "
      "text-anchor=\"middle\">{}</text>\n",
      kTop + kPlotHeight / 2, escape_markup(spec.y_label));
}

// The first, the last and evenly spaced labels between; the ends aligned inwards.
void append_x_axis(std::string& out, const ChartSpec& spec, const PlotArea& plot) {
  const std::size_t n = plot.n;
  auto x_label = [&](std::size_t i) {
    const char* anchor = n > 1 && i == 0 ? "start" : (n > 1 && i == n - 1 ? "end" : "middle");
    double x = plot.x_of(i) + (n > 1 && i == 0 ? -4.0 : (n > 1 && i == n - 1 ? 4.0 : 0.0));
    return fmt::format(
        "<line class=\"grid\" x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\"/>"
        "<text class=\"tick\" x=\"{3:.1f}\" y=\"{4}\" text-anchor=\"{5}\">{6}</text>\n",
        plot.x_of(i), kTop + kPlotHeight, kTop + kPlotHeight + 4, x, kTop + kPlotHeight + 16,
        anchor, escape_markup(spec.points[i].label));
  };
  if (n > 0) {
    std::size_t stride = std::max<std::size_t>(1, (n + kMaxXLabels - 2) / (kMaxXLabels - 1));
    for (std::size_t i = 0; i < n; i += stride) {
      if (i != n - 1 && n - 1 - i < stride / 2 + 1 && i != 0) {
        continue;  // too close to the newest label
      }
      out += x_label(i);
    }
    if ((n - 1) % stride != 0) {
      out += x_label(n - 1);
    }
  }
  out +=
      fmt::format("<text class=\"axis-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                  kLeft + kPlotWidth / 2, kHeight - 10, escape_markup(spec.x_label));
}

// The line, broken where a run has no value, its dots, and the newest value written out.
void append_series(std::string& out, const ChartSpec& spec, const PlotArea& plot) {
  std::string path;
  bool pen_down = false;
  for (std::size_t i = 0; i < plot.n; ++i) {
    if (!plottable(spec.points[i])) {
      pen_down = false;
      continue;
    }
    path += fmt::format("{}{:.1f},{:.1f} ", pen_down ? "L" : "M", plot.x_of(i),
                        plot.y_of(*spec.points[i].value));
    pen_down = true;
  }
  if (!path.empty()) {
    path.pop_back();
    out += fmt::format("<path class=\"line\" d=\"{}\"/>\n", path);
  }
  std::optional<std::size_t> newest;
  for (std::size_t i = 0; i < plot.n; ++i) {
    const auto& point = spec.points[i];
    if (!plottable(point)) {
      continue;
    }
    newest = i;
    std::string dot = fmt::format(
        "<circle class=\"dot\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"{}\"><title>{}</title></circle>",
        plot.x_of(i), plot.y_of(*point.value), plot.n > 30 ? 2.5 : 3.5,
        escape_markup(point.tooltip));
    // A point with nowhere to go (a second of a run's progress) is not a link.
    out += point.href.empty()
               ? dot + "\n"
               : fmt::format("<a href=\"{}\">{}</a>\n", escape_markup(point.href), dot);
  }
  if (newest) {
    double value = *spec.points[*newest].value;
    double x = plot.x_of(*newest);
    double y = plot.y_of(value);
    out += fmt::format(
        "<text class=\"newest\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"{}\">{} {}</text>\n",
        x + (x > kLeft + kPlotWidth * 0.6 ? -6.0 : 6.0), y < kTop + 14 ? y + 16 : y - 8,
        x > kLeft + kPlotWidth * 0.6 ? "end" : "start", format_figure(value),
        escape_markup(spec.unit));
  } else {
    out += fmt::format(
        "<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">no values</text>\n",
        kLeft + kPlotWidth / 2, kTop + kPlotHeight / 2);
  }
}

}  // namespace

std::string render_svg_chart(const ChartSpec& spec) {
  double max_value = 0;
  for (const auto& point : spec.points) {
    if (plottable(point)) {
      max_value = std::max(max_value, *point.value);
    }
  }
  const PlotArea plot{spec.points.size(), y_scale_for(max_value)};

  std::string out;
  out.reserve(4096 + plot.n * 256);
  std::string title_id = spec.id + "-title";
  out += fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"{}\" class=\"chart {}\" viewBox=\"0 0 {} "
      "{}\" width=\"{}\" height=\"{}\" role=\"img\" aria-labelledby=\"{}\" data-rung=\"{}\">\n",
      escape_markup(spec.id), escape_markup(spec.css_class), kWidth, kHeight, kWidth, kHeight,
      escape_markup(title_id), rung_number(spec.rung));
  out += fmt::format("<title id=\"{}\">{} ({})</title>\n", escape_markup(title_id),
                     escape_markup(spec.title), escape_markup(spec.unit));
  out += fmt::format("<rect class=\"plot\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>\n", kLeft,
                     kTop, kPlotWidth, kPlotHeight);
  out += fmt::format("<text class=\"chart-title\" x=\"{}\" y=\"18\">{}</text>\n", kLeft,
                     escape_markup(spec.title));
  append_y_axis(out, spec, plot);
  append_x_axis(out, spec, plot);
  append_series(out, spec, plot);
  out += "</svg>\n";
  return out;
}

}  // namespace ernic::reports
