#include "record_points.h"

#include <algorithm>
#include <set>

#include "common/units.h"

namespace ernic::reports {
namespace {

const nlohmann::json& empty_object() {
  static const nlohmann::json empty = nlohmann::json::object();
  return empty;
}

const nlohmann::json& member(const nlohmann::json& object, const char* key) {
  if (object.is_object()) {
    auto it = object.find(key);
    if (it != object.end()) {
      return *it;
    }
  }
  return empty_object();
}

bool contains(const std::string& text, const char* part) {
  return text.find(part) != std::string::npos;
}

std::string detect_verb(const nlohmann::json& point) {
  std::string candidates[] = {json_text(member(point, "params"), "verb"),
                              json_text(member(point, "params"), "test"),
                              json_text(member(point, "commands"), "client"),
                              json_text(point, "benchmark"), json_text(point, "id")};
  for (const auto& text : candidates) {
    for (const char* verb : {"send", "write", "read"}) {
      if (contains(text, verb)) {
        return verb;
      }
    }
  }
  return "";
}

PointKind detect_kind(const nlohmann::json& point, const std::vector<std::string>& metrics) {
  std::string tool = json_text(point, "tool");
  auto has = [&](const char* name) {
    return std::find(metrics.begin(), metrics.end(), name) != metrics.end();
  };
  if (tool == "iperf3" || contains(json_text(member(point, "commands"), "client"), "iperf3")) {
    std::string protocol = json_text(member(point, "params"), "protocol");
    return protocol.empty() || protocol == "tcp" ? PointKind::kTcp : PointKind::kOther;
  }
  if (tool == "fio" || contains(json_text(member(point, "commands"), "client"), "fio ")) {
    return PointKind::kNvmeof;
  }
  if (has("lat_typical_us")) {
    return PointKind::kLatency;
  }
  if (has("bw_peak_GBs") || has("bw_avg_GBs")) {
    return PointKind::kBandwidth;
  }
  return PointKind::kOther;
}

}  // namespace

std::string json_text(const nlohmann::json& object, const char* key) {
  const auto& value = member(object, key);
  if (value.is_string()) {
    return value.get<std::string>();
  }
  if (value.is_null() || (value.is_object() && value.empty())) {
    return "";
  }
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

double median_of(std::vector<double> values) {
  if (values.empty()) {
    return 0;
  }
  std::sort(values.begin(), values.end());
  std::size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

std::vector<std::string> metric_names(const nlohmann::json& point) {
  std::set<std::string> names;
  for (const char* key : {"metrics", "summary"}) {
    const auto& map = member(point, key);
    if (map.is_object()) {
      for (const auto& [name, value] : map.items()) {
        names.insert(name);
      }
    }
  }
  const auto& samples = member(point, "samples");
  if (samples.is_array()) {
    for (const auto& sample : samples) {
      const auto& metrics = member(sample, "metrics");
      if (metrics.is_object()) {
        for (const auto& [name, value] : metrics.items()) {
          names.insert(name);
        }
      }
    }
  }
  return {names.begin(), names.end()};
}

std::vector<double> metric_samples(const nlohmann::json& point, const std::string& metric) {
  std::vector<double> out;
  const auto& samples = member(point, "samples");
  if (!samples.is_array()) {
    return out;
  }
  for (const auto& sample : samples) {
    const auto& value = member(member(sample, "metrics"), metric.c_str());
    if (value.is_number()) {
      out.push_back(value.get<double>());
    }
  }
  return out;
}

std::optional<double> metric_median(const nlohmann::json& point, const std::string& metric) {
  const auto& median = member(member(member(point, "summary"), metric.c_str()), "median");
  if (median.is_number()) {
    return median.get<double>();
  }
  auto samples = metric_samples(point, metric);
  if (samples.empty()) {
    return std::nullopt;
  }
  return median_of(std::move(samples));
}

std::string metric_unit(const nlohmann::json& point, const std::string& metric) {
  std::string unit = json_text(member(member(point, "metrics"), metric.c_str()), "unit");
  if (!unit.empty()) {
    return unit;
  }
  auto ends_with = [&](const char* suffix) {
    std::string s(suffix);
    return metric.size() >= s.size() && metric.compare(metric.size() - s.size(), s.size(), s) == 0;
  };
  if (ends_with("_GBs")) {
    return "GB/s";
  }
  if (ends_with("_us")) {
    return "\u00b5s";
  }
  if (ends_with("_mpps")) {
    return "Mpps";
  }
  if (ends_with("_iops_M")) {
    return "M IOPS";
  }
  return "";
}

int metric_direction_by_name(const std::string& metric) {
  auto starts = [&](const char* prefix) { return metric.rfind(prefix, 0) == 0; };
  auto ends = [&](const char* suffix) {
    std::string s(suffix);
    return metric.size() >= s.size() && metric.compare(metric.size() - s.size(), s.size(), s) == 0;
  };
  if (starts("lat") || ends("_us") || ends("_ms") || ends("_ns") || ends("_s") ||
      contains(metric, "latency")) {
    return -1;
  }
  if (starts("bw") || ends("GBs") || ends("Gbps") || contains(metric, "bandwidth") ||
      contains(metric, "iops") || contains(metric, "mpps") || contains(metric, "rate")) {
    return 1;
  }
  return 0;
}

int metric_direction(const nlohmann::json& point, const std::string& metric) {
  std::string better = json_text(member(member(point, "metrics"), metric.c_str()), "better");
  if (better == "higher") {
    return 1;
  }
  if (better == "lower") {
    return -1;
  }
  return metric_direction_by_name(metric);
}

std::string primary_metric(const nlohmann::json& point) {
  auto names = metric_names(point);
  for (const char* preferred : {"bw_avg_GBs", "bw_peak_GBs", "lat_typical_us", "bandwidth_GBs",
                                "iops", "bw_GBs", "latency_us"}) {
    if (std::find(names.begin(), names.end(), preferred) != names.end()) {
      return preferred;
    }
  }
  return names.empty() ? std::string() : names.front();
}

std::vector<PointView> points_of(const nlohmann::json& record) {
  std::vector<PointView> out;
  const auto& points = member(member(record, "ernicctl"), "points");
  if (!points.is_array()) {
    return out;
  }
  for (std::size_t i = 0; i < points.size(); ++i) {
    const auto& point = points[i];
    if (!point.is_object()) {
      continue;
    }
    PointView view;
    view.json = &point;
    view.index = i;
    view.id = json_text(point, "id");
    view.status = json_text(point, "status");
    view.reason = json_text(point, "reason");
    view.kind = detect_kind(point, metric_names(point));
    view.verb = detect_verb(point);
    std::string size = json_text(member(point, "params"), "size");
    if (!size.empty()) {
      view.size = parse_size(size);
    }
    out.push_back(std::move(view));
  }
  return out;
}

}  // namespace ernic::reports
