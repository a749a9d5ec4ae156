#pragma once

// A run's points as rocm-ernic's per-run CSV files (perf-csv/*.csv), so that their report script
// reads an ernicctl run directory like one of their own, and the `perf` section of summary.json
// that their report script would compute from those files.

#include <array>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "history/history_record.h"

namespace ernic::reports {

enum class PerfSection { kBandwidth, kLatency, kReliability };
inline constexpr std::array<PerfSection, 3> kAllPerfSections = {
    PerfSection::kBandwidth, PerfSection::kLatency, PerfSection::kReliability};

// One measurement (one sample of one point). A value the tool does not measure is nullopt
// (written "N/A"); a failed measurement has `failed` set (written "FAIL" in every column).
struct PerfRow {
  std::string verb;  // send | write | read | tcp | nvmeof | pingpong
  std::string size;  // bytes, or "stream" for TCP
  int run = 0;       // the repetition (reliability rows)
  bool failed = false;
  std::vector<std::optional<double>> values;  // one per metric column
};

struct PerfTable {
  PerfSection section = PerfSection::kBandwidth;
  std::vector<PerfRow> rows;

  const char* name() const;       // "bandwidth", "latency", "reliability"
  std::string file_name() const;  // "bandwidth.csv", ...
  // The metric columns: bw_peak_GBs, bw_avg_GBs, msg_rate_mpps (bandwidth, reliability) or
  // lat_min_us, lat_typical_us, lat_max_us (latency).
  const std::vector<std::string>& metrics() const;
  // The whole file: rocm-ernic's header, then one line per row.
  std::string csv() const;
};

// The three tables of a record (a table may have no rows). Rows come from the tool each point
// names: perftest bw/lat (verb from params, size in bytes), iperf3 TCP without --reverse (verb
// tcp, size stream, bw_avg_GBs = receiver bandwidth), fio (verb nvmeof, size = bs,
// bw_avg_GBs, msg_rate_mpps = millions of IOPS), ibv_rc_pingpong (verb pingpong). For each
// verb and size, bandwidth and latency hold the samples of the first point that passed (the one
// ernicctl publishes), so their medians are the record's; a point that did not pass is one FAIL
// row per planned repetition. Every repeated perftest bandwidth point is also reliability data
// (run = repetition).
std::array<PerfTable, 3> perf_tables(const HistoryRecord& record);

// rocm-ernic's summary.json `perf` section: per table, one row per verb, size and metric
// {verb, size, metric, n, n_ok, mean, median, min, max} (statistics over the numeric cells;
// null when there are none), in first-seen order of verb and size.
nlohmann::json perf_summary(const std::array<PerfTable, 3>& tables);

// Writes DIR/<table>.csv for every table; returns how many files were written.
std::size_t write_perf_csv(const std::filesystem::path& dir,
                           const std::array<PerfTable, 3>& tables);

}  // namespace ernic::reports
