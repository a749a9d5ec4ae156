#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace ernic::reports {

// What a point measured, as the reference tables group it. Read from the metric names (the
// rocm-ernic CSV columns: bw_peak_GBs, lat_typical_us, ...) and the tool, never from the
// scenario's free-form benchmark name alone.
enum class PointKind { kBandwidth, kLatency, kTcp, kNvmeof, kOther };

// One point of an ernicctl record, with the fields the reports read pulled out.
struct PointView {
  const nlohmann::json* json = nullptr;
  std::size_t index = 0;  // position in ernicctl.points
  std::string id;
  std::string status;  // passed | failed | skipped
  std::string reason;
  PointKind kind = PointKind::kOther;
  std::string verb;                  // send | write | read, when the point has one
  std::optional<std::uint64_t> size;  // params.size in bytes
};

// The points of a record (empty for a rocm-ernic record, which has none).
std::vector<PointView> points_of(const nlohmann::json& record);

// The metric names a point has, from its `metrics` map, summary and samples, sorted.
std::vector<std::string> metric_names(const nlohmann::json& point);

// Raw per-repetition values of one metric (samples[].metrics[name]), in repetition order.
std::vector<double> metric_samples(const nlohmann::json& point, const std::string& metric);

// summary[metric].median, else the median of the samples.
std::optional<double> metric_median(const nlohmann::json& point, const std::string& metric);

// Unit from the point's `metrics` map, else from the name ("_GBs" -> GB/s, "_us" -> us).
std::string metric_unit(const nlohmann::json& point, const std::string& metric);

// +1 when higher is better, -1 when lower is, 0 when unknown. The point's `metrics` map wins;
// otherwise bandwidth, rate and IOPS names are higher-better and latency/time names lower.
int metric_direction(const nlohmann::json& point, const std::string& metric);
int metric_direction_by_name(const std::string& metric);

// The metric a one-figure view of the point shows (bw_avg_GBs for perftest bandwidth,
// lat_typical_us for latency, bandwidth_GBs for iperf3, ...).
std::string primary_metric(const nlohmann::json& point);

double median_of(std::vector<double> values);

// `value` as text whatever its JSON type ("" for null or absent): for details tables.
std::string json_text(const nlohmann::json& object, const char* key);

}  // namespace ernic::reports
