#include "benchmarks/perftest_parser.h"

#include <fmt/format.h>

// What a parsed perftest output says in ernicctl's terms: per-row metrics in rocm-ernic's
// units, the JSON of `ernicctl parse perftest`, and the parser's registration.
namespace ernic {
namespace {

constexpr std::string_view kPerftestTool = "perftest";

// Bytes per second per unit of a bandwidth column.
std::optional<double> bytes_per_second(std::string_view unit) {
  if (unit == "MB/sec" || unit == "MiB/sec") {
    return 1048576.0;  // perftest's "MB" has always been 2^20 bytes
  }
  if (unit == "Gb/sec") {
    return 1e9 / 8;
  }
  return std::nullopt;
}

}  // namespace

std::map<std::string, double> perftest_row_metrics(const PerftestTable& table,
                                                   const PerftestRow& row) {
  std::map<std::string, double> metrics;
  auto add = [&](const char* metric, std::string_view column_name, auto convert) {
    const PerftestColumn* found = table.column(column_name);
    std::optional<double> value = table.value(row, column_name);
    if (found == nullptr || !value) {
      return;
    }
    if (std::optional<double> converted = convert(found->unit, *value)) {
      metrics[metric] = *converted;
    }
  };
  auto to_gbs = [](const std::string& unit, double value) -> std::optional<double> {
    auto scale = bytes_per_second(unit);
    return scale ? std::optional<double>(value * *scale / 1e9) : std::nullopt;
  };
  auto to_us = [](const std::string& unit, double value) -> std::optional<double> {
    return unit == "usec" ? std::optional<double>(value) : std::nullopt;
  };
  auto to_mpps = [](const std::string& unit, double value) -> std::optional<double> {
    return unit == "Mpps" ? std::optional<double>(value) : std::nullopt;
  };
  add("bw_peak_GBs", "BW peak", to_gbs);
  add("bw_avg_GBs", "BW average", to_gbs);
  add("msg_rate_mpps", "MsgRate", to_mpps);
  add("lat_min_us", "t_min", to_us);
  add("lat_max_us", "t_max", to_us);
  add("lat_typical_us", "t_typical", to_us);
  add("lat_avg_us", "t_avg", to_us);
  add("lat_stdev_us", "t_stdev", to_us);
  add("lat_p99_us", "99% percentile", to_us);
  add("lat_p999_us", "99.9% percentile", to_us);
  return metrics;
}

const char* to_string(PerftestSide side) {
  return side == PerftestSide::kServer ? "server" : "client";
}

const char* to_string(PerftestMode mode) {
  return mode == PerftestMode::kBandwidth ? "bw" : "lat";
}

std::optional<PerftestDistribution> perftest_row_distribution(const PerftestTable& table,
                                                              const PerftestRow& row) {
  if (table.mode == PerftestMode::kLatency) {
    if (!row.histogram.empty()) {
      if (row.histogram_unit != "usec") {
        return std::nullopt;  // cycles: no clock rate to convert them with
      }
      return PerftestDistribution{kLatencyDistribution, Distribution::of(row.histogram)};
    }
    std::map<std::string, double> metrics = perftest_row_metrics(table, row);
    std::vector<std::pair<double, double>> percentiles;
    for (const auto& [metric, probability] :
         {std::pair{"lat_min_us", 0.0}, std::pair{"lat_typical_us", 0.5},
          std::pair{"lat_p99_us", 0.99}, std::pair{"lat_p999_us", 0.999},
          std::pair{"lat_max_us", 1.0}}) {
      if (auto it = metrics.find(metric); it != metrics.end()) {
        percentiles.emplace_back(probability, it->second);
      }
    }
    auto sketch = distribution_from_percentiles(row.iterations, percentiles);
    return sketch ? std::optional(PerftestDistribution{kLatencyDistribution, *sketch})
                  : std::nullopt;
  }
  // Rows of the same size before the summary row: one per second (--report-per-second).
  std::vector<const PerftestRow*> rows = table.rows_for_size(row.bytes);
  if (rows.size() < 2 || rows.back() != &row) {
    return std::nullopt;
  }
  std::vector<double> rates;
  for (std::size_t i = 0; i + 1 < rows.size(); ++i) {
    auto metrics = perftest_row_metrics(table, *rows[i]);
    if (auto it = metrics.find("bw_avg_GBs"); it != metrics.end()) {
      rates.push_back(it->second);
    }
  }
  if (rates.empty()) {
    return std::nullopt;
  }
  return PerftestDistribution{kBandwidthDistribution, Distribution::series(std::move(rates), 1.0)};
}

nlohmann::json perftest_output_to_json(const PerftestOutput& output) {
  nlohmann::json tables = nlohmann::json::array();
  for (const PerftestTable& table : output.tables) {
    nlohmann::json units = nlohmann::json::object();
    for (const auto& column : table.columns) {
      if (!column.unit.empty()) {
        units[column.name] = column.unit;
      }
    }
    nlohmann::json rows = nlohmann::json::array();
    for (const PerftestRow& row : table.rows) {
      nlohmann::json columns = nlohmann::json::object();
      for (std::size_t i = 0; i < table.columns.size() && i < row.values.size(); ++i) {
        const std::string& name = table.columns[i].name;
        if (name == "#bytes") {
          columns[name] = row.bytes;
        } else if (name == "#iterations") {
          columns[name] = row.iterations;
        } else if (row.values[i]) {
          columns[name] = *row.values[i];
        } else {
          columns[name] = nullptr;  // printed as 0.00 (BW peak) or -nan: not measured
        }
      }
      nlohmann::json entry = {{"line", row.line},
                              {"size", row.bytes},
                              {"columns", columns},
                              {"metrics", perftest_row_metrics(table, row)}};
      if (!row.histogram.empty()) {
        entry["histogram"] = {{"iterations", row.histogram.size()}, {"unit", row.histogram_unit}};
      }
      rows.push_back(std::move(entry));
    }
    tables.push_back({{"test", table.test},
                      {"verb", table.verb},
                      {"mode", to_string(table.mode)},
                      {"unit", table.unit()},
                      {"units", units},
                      {"side", to_string(table.side)},
                      {"header_line", table.header_line},
                      {"complete", table.closed && !table.rows.empty()},
                      {"rows", rows}});
  }
  nlohmann::json data = {
      {"tool", kPerftestTool}, {"tables", tables}, {"warnings", output.warnings}};
  if (!output.error.empty()) {
    data["error"] = output.error;
    data["error_line"] = output.error_line;
  }
  if (output.time_to_first_rts_ms) {
    data["time_to_first_rts_ms"] = *output.time_to_first_rts_ms;
  }
  return data;
}

ParsedFile parse_perftest_file(std::string_view text) {
  PerftestOutput output = parse_perftest_output(text);
  ParsedFile file;
  file.data = perftest_output_to_json(output);
  if (!output.error.empty()) {
    file.error = fmt::format("{}: {}", kPerftestTool, output.error);
  }
  return file;
}

OutputParser perftest_output_parser() {
  return {std::string(kPerftestTool),
          "perftest ib_{send,write,read}_{bw,lat} text output (either side, or both merged)",
          &parse_perftest_file};
}

}  // namespace ernic
