#include "record_points.h"

#include <algorithm>

#include "base/units.h"

namespace ernic::reports {
namespace {

bool contains(const std::string& text, const char* part) {
  return text.find(part) != std::string::npos;
}

bool ends_with(const std::string& text, const char* suffix) {
  std::string_view s(suffix);
  return text.size() >= s.size() && text.compare(text.size() - s.size(), s.size(), s) == 0;
}

// The verb perftest ran; other tools have none (rocm-ernic's CSV verbs tcp, nvmeof and pingpong
// come from the tool).
std::string verb_of(const PointRecord& point) {
  for (const std::string& text : {point.param("verb"), point.param("test")}) {
    for (const char* verb : {"send", "write", "read"}) {
      if (contains(text, verb)) {
        return verb;
      }
    }
  }
  return "";
}

PointKind kind_of(const PointRecord& point) {
  if (point.tool == "iperf3") {
    std::string protocol = point.param("protocol");
    return protocol.empty() || protocol == "tcp" ? PointKind::kTcp : PointKind::kOther;
  }
  if (point.tool == "fio") {
    return PointKind::kNvmeof;
  }
  // perftest points say their mode; the `metrics` map lists every metric the tool can report
  // (bandwidth and latency alike), so it only decides when nothing was measured.
  std::string mode = point.param("mode");
  if (mode == "bw") {
    return PointKind::kBandwidth;
  }
  if (mode == "lat") {
    return PointKind::kLatency;
  }
  auto metrics = point.measured_metrics();
  if (metrics.empty()) {
    for (const auto& [name, info] : point.metrics) {
      metrics.push_back(name);
    }
  }
  auto has = [&](const char* name) {
    return std::find(metrics.begin(), metrics.end(), name) != metrics.end();
  };
  if (has("lat_typical_us")) {
    return PointKind::kLatency;
  }
  if (has("bw_peak_GBs") || has("bw_avg_GBs")) {
    return PointKind::kBandwidth;
  }
  return PointKind::kOther;
}

}  // namespace

std::string metric_unit(const PointRecord& point, const std::string& metric) {
  if (auto it = point.metrics.find(metric); it != point.metrics.end() && !it->second.unit.empty()) {
    return it->second.unit;
  }
  if (ends_with(metric, "_GBs")) {
    return "GB/s";
  }
  if (ends_with(metric, "_us")) {
    return "\u00b5s";
  }
  if (ends_with(metric, "_mpps")) {
    return "Mpps";
  }
  if (ends_with(metric, "_iops_M")) {
    return "M IOPS";
  }
  return "";
}

int metric_direction_by_name(const std::string& metric) {
  auto starts = [&](const char* prefix) { return metric.rfind(prefix, 0) == 0; };
  if (starts("lat") || ends_with(metric, "_us") || ends_with(metric, "_ms") ||
      ends_with(metric, "_ns") || ends_with(metric, "_s") || contains(metric, "latency")) {
    return -1;
  }
  if (starts("bw") || ends_with(metric, "GBs") || ends_with(metric, "Gbps") ||
      contains(metric, "bandwidth") || contains(metric, "iops") || contains(metric, "mpps") ||
      contains(metric, "rate")) {
    return 1;
  }
  return 0;
}

int metric_direction(const PointRecord& point, const std::string& metric) {
  if (auto it = point.metrics.find(metric); it != point.metrics.end()) {
    if (it->second.better == "higher") {
      return 1;
    }
    if (it->second.better == "lower") {
      return -1;
    }
  }
  return metric_direction_by_name(metric);
}

std::string primary_metric(const PointRecord& point) {
  auto names = point.measured_metrics();
  for (const char* preferred : {"bw_avg_GBs", "bw_peak_GBs", "lat_typical_us", "bandwidth_GBs",
                                "iops", "bw_GBs", "latency_us"}) {
    if (std::find(names.begin(), names.end(), preferred) != names.end()) {
      return preferred;
    }
  }
  return names.empty() ? std::string() : names.front();
}

std::vector<PointView> points_of(const HistoryRecord& record) {
  std::vector<PointView> out;
  const auto& points = record.points();
  for (std::size_t i = 0; i < points.size(); ++i) {
    PointView view{.record = &points[i],
                   .index = i,
                   .kind = kind_of(points[i]),
                   .verb = verb_of(points[i]),
                   .size = std::nullopt};
    if (std::string size = points[i].param("size"); !size.empty()) {
      view.size = parse_size(size);
    }
    out.push_back(std::move(view));
  }
  return out;
}

}  // namespace ernic::reports
