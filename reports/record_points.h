#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "history/history_record.h"

namespace ernic::reports {

// What a point measured, as the reference tables group it. Read from the tool that ran it (the
// record names it) and the metric names (the rocm-ernic CSV columns: bw_peak_GBs,
// lat_typical_us, ...), never from the scenario's free-form benchmark name or a command line.
enum class PointKind { kBandwidth, kLatency, kTcp, kNvmeof, kOther };

// One point of an ernicctl record, with what the reports group it by.
struct PointView {
  const PointRecord* record = nullptr;
  std::size_t index = 0;  // position in ernicctl.points
  PointKind kind = PointKind::kOther;
  std::string verb;                   // send | write | read, when the point has one
  std::optional<std::uint64_t> size;  // params.size in bytes

  const std::string& id() const { return record->id; }
  const std::string& status() const { return record->status; }
  std::string reason() const { return record->reason.value_or(""); }
};

// The points of a record (empty for a rocm-ernic record, which has none).
std::vector<PointView> points_of(const HistoryRecord& record);

// Unit from the point's `metrics` map, else from the name ("_GBs" -> GB/s, "_us" -> us).
std::string metric_unit(const PointRecord& point, const std::string& metric);

// +1 when higher is better, -1 when lower is, 0 when unknown. The point's `metrics` map wins;
// otherwise bandwidth, rate and IOPS names are higher-better and latency/time names lower.
int metric_direction(const PointRecord& point, const std::string& metric);
int metric_direction_by_name(const std::string& metric);

// The metric a one-figure view of the point shows (bw_avg_GBs for perftest bandwidth,
// lat_typical_us for latency, bandwidth_GBs for iperf3, ...).
std::string primary_metric(const PointRecord& point);

}  // namespace ernic::reports
