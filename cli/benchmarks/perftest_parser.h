#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "benchmarks/parser.h"
#include "history/distribution.h"

namespace ernic {

// What perftest (ib_{send,write,read}_{bw,lat}, and ernicctl's load generator, which prints
// the same format) printed: its result tables, warnings, and the error that ended it, if any.
// Columns are identified by their header name and unit, never by their position.

enum class PerftestSide { kServer, kClient };
enum class PerftestMode { kBandwidth, kLatency };

struct PerftestColumn {
  std::string name;  // as printed without the unit: "#bytes", "BW peak", "99% percentile"
  std::string unit;  // as printed inside the brackets: "MB/sec", "Gb/sec", "usec"; may be empty
};

struct PerftestRow {
  int line = 0;  // 1-based line in the text
  std::uint64_t bytes = 0;
  std::uint64_t iterations = 0;
  // One per column, in column order. Absent when perftest printed no measurement: "-nan",
  // or BW peak 0.00 (perftest prints that when it did not measure the peak).
  std::vector<std::optional<double>> values;
  // Latency tests with -H/--report-histogram: every measured iteration, as perftest printed them
  // ("#, usec" then "1, 2.31" ... before the row), in histogram_unit ("usec" or "cycles").
  std::vector<double> histogram;
  std::string histogram_unit;
};

struct PerftestTable {
  std::string test;  // the banner title as printed, e.g. "RDMA_Write BW Test"; may be empty
  std::string verb;  // send, write, read, atomic; empty when the title was not seen
  PerftestMode mode = PerftestMode::kBandwidth;
  PerftestSide side = PerftestSide::kClient;
  int header_line = 0;
  bool closed = false;  // a dashed line (or the next table) ended it
  std::vector<PerftestColumn> columns;
  std::vector<PerftestRow> rows;

  // The column named `name` (without unit), or nullptr.
  const PerftestColumn* column(std::string_view name) const;
  // The value of column `name` in `row`, absent when the column is missing or not measured.
  std::optional<double> value(const PerftestRow& row, std::string_view name) const;
  // The row for a message size, or nullptr. With several rows of one size (the rows a
  // bandwidth test prints per second, then its summary) the last one: the summary.
  const PerftestRow* row_for_size(std::uint64_t bytes) const;
  // Every row of a size, in printed order.
  std::vector<const PerftestRow*> rows_for_size(std::uint64_t bytes) const;
  // The unit of the bandwidth columns (bw tables) or of the latency columns (lat tables).
  std::string unit() const;
};

struct PerftestOutput {
  std::vector<PerftestTable> tables;
  std::vector<std::string> warnings;  // "line 1: Device not recognized ..."
  // Why this output is not (or not entirely) a result: a tool error, a malformed row, a table
  // cut short. Empty when every table is complete. Tables read before the error are kept.
  std::string error;
  int error_line = 0;
  // The embedded load generator's ` Time to first QP in RTS: 12.34 ms` (rung 2: the runtime
  // start, from process start to the first queue pair ready to send). Real perftest prints none.
  std::optional<double> time_to_first_rts_ms;

  bool ok() const { return error.empty() && !tables.empty(); }
  // The first table of `side`, or nullptr.
  const PerftestTable* table(PerftestSide side) const;
};

// Reads a whole perftest output (stdout, stderr or both merged; one side or both sides
// interleaved). Never throws for any input.
PerftestOutput parse_perftest_output(std::string_view text);

// Metrics of one row in rocm-ernic's units: bw_peak_GBs, bw_avg_GBs, msg_rate_mpps (bandwidth
// tables); lat_min_us, lat_max_us, lat_typical_us, lat_avg_us, lat_stdev_us, lat_p99_us,
// lat_p999_us (latency tables). A value that was not measured, or whose unit cannot be
// converted (latency in cycles, an unknown bandwidth unit), is left out.
std::map<std::string, double> perftest_row_metrics(const PerftestTable& table,
                                                   const PerftestRow& row);

// The distribution behind one row's figures (kLatencyDistribution in microseconds or
// kBandwidthDistribution in GB/s), or nullopt:
// - a latency row printed with -H: its iterations; without (older outputs): a coarse sketch from
//   the row's t_min, t_typical, 99 %, 99.9 % and t_max;
// - a bandwidth row after per-second rows of the same size: those rows' BW average, one a second.
struct PerftestDistribution {
  std::string kind;
  Distribution distribution;
};
std::optional<PerftestDistribution> perftest_row_distribution(const PerftestTable& table,
                                                              const PerftestRow& row);

// `ernicctl parse perftest FILE`: tables with every column by name, per-row metrics,
// warnings; the error (with the partial tables) when the output is not a complete result.
nlohmann::json perftest_output_to_json(const PerftestOutput& output);
ParsedFile parse_perftest_file(std::string_view text);
OutputParser perftest_output_parser();

const char* to_string(PerftestSide side);
const char* to_string(PerftestMode mode);

}  // namespace ernic
