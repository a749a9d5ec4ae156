#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "benchmarks/parser.h"

namespace ernic {

// What `fio --output-format=json` printed. fio 3.x reports latencies in nanoseconds
// (clat_ns, lat_ns) and bandwidth in bytes/s (bw_bytes); before 3.0 latencies were in
// microseconds (clat, lat) and only `bw` (KiB/s) existed. Everything here is converted to
// microseconds and bytes per second.
struct FioLatency {
  std::optional<double> mean_us;
  std::map<double, double> percentiles_us;  // 99.0 -> value; fio's "0.00" fillers are dropped

  std::optional<double> percentile(double p) const;
};

struct FioDirection {
  double iops = 0;
  double bw_bytes_per_second = 0;
  std::uint64_t io_bytes = 0;
  std::uint64_t total_ios = 0;
  double runtime_ms = 0;
  FioLatency clat;  // completion latency
  FioLatency lat;   // submission plus completion

  bool active() const { return total_ios > 0 || iops > 0; }
};

struct FioJob {
  std::string name;
  int error = 0;   // fio's per-job errno
  std::string rw;  // from the job's options, else the global options
  std::string bs;
  FioDirection read;
  FioDirection write;
  FioDirection trim;
};

// How far fio had got when it printed a report (--status-interval prints one every interval,
// each cumulative since the start): bytes moved over every job and direction, and run time.
struct FioProgress {
  double runtime_ms = 0;
  std::uint64_t io_bytes = 0;
};

struct FioOutput {
  std::string version;                // "fio-3.33"
  std::vector<FioJob> jobs;           // from the last (final) report
  std::vector<FioProgress> progress;  // every report in the order printed, the final one last
  // Lines around the JSON ("note: ..." before it, "fio: ..." after it).
  std::vector<std::string> notes;
  std::string error;  // empty when the output is a result
  int error_line = 0;

  bool ok() const { return error.empty() && !jobs.empty(); }
};

// Reads fio's whole stdout. Never throws.
FioOutput parse_fio_output(std::string_view text);

// Over all jobs: iops, iops_M, bw_avg_GBs, read_iops, write_iops, read_bw_GBs, write_bw_GBs,
// clat_mean_us (weighted by I/O count), clat_p50_us, clat_p99_us, clat_p999_us (the worst job
// and direction that did I/O; exact with --group_reporting, which makes one job).
std::map<std::string, double> fio_metrics(const FioOutput& output);

// The rate of each interval between consecutive reports (from the start to the first, then
// report to report), in bytes per second, oldest first. Only intervals of half to one and a half
// times `interval_ms` are kept: the short tail before the final report and the single interval
// of an output without status reports say nothing about progress over time.
std::vector<double> fio_interval_rates(const FioOutput& output, double interval_ms);

// `ernicctl parse fio FILE`.
nlohmann::json fio_output_to_json(const FioOutput& output);
ParsedFile parse_fio_file(std::string_view text);
OutputParser fio_output_parser();

}  // namespace ernic
