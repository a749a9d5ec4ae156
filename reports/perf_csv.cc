#include "perf_csv.h"

#include <fmt/format.h>

#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "base/durable_file.h"
#include "history/statistics.h"

namespace ernic::reports {
namespace {

const std::vector<std::string>& bandwidth_metrics() {
  static const std::vector<std::string> columns = {"bw_peak_GBs", "bw_avg_GBs", "msg_rate_mpps"};
  return columns;
}

const std::vector<std::string>& latency_metrics() {
  static const std::vector<std::string> columns = {"lat_min_us", "lat_typical_us", "lat_max_us"};
  return columns;
}

// Where one point's samples go: its CSV verb and size, and which of the point's metrics fills
// each column ("" for a column the tool does not measure).
struct RowSource {
  PerfSection section = PerfSection::kBandwidth;
  std::string verb;
  std::string size;
  std::vector<std::string> metrics;  // parallel to the section's columns
};

std::vector<RowSource> sources_of(const PointRecord& point) {
  if (point.tool == "perftest") {
    std::string verb = point.param("verb");
    std::string size = point.param("size");
    if (point.param("mode") == "lat") {
      return {{PerfSection::kLatency, verb, size, latency_metrics()}};
    }
    return {{PerfSection::kBandwidth, verb, size, bandwidth_metrics()}};
  }
  if (point.tool == "iperf3") {
    std::string protocol = point.param("protocol");
    if ((protocol.empty() || protocol == "tcp") && point.param("reverse") != "true") {
      return {{PerfSection::kBandwidth, "tcp", "stream", {"", "bandwidth_GBs", ""}}};
    }
    return {};  // rocm-ernic has no row for reversed TCP or UDP
  }
  if (point.tool == "fio") {
    return {{PerfSection::kBandwidth, "nvmeof", point.param("bs"), {"", "bw_avg_GBs", "iops_M"}}};
  }
  if (point.tool == "pingpong") {
    std::string size = point.param("size");
    return {{PerfSection::kBandwidth, "pingpong", size, {"", "bw_GBs", ""}},
            {PerfSection::kLatency, "pingpong", size, {"", "lat_per_iter_us", ""}}};
  }
  return {};
}

void add_rows(const PointRecord& point, const RowSource& source, PerfTable& table) {
  if (!point.passed()) {
    int planned = std::max(point.repetitions.value_or(1), 1);
    for (int run = 1; run <= planned; ++run) {
      table.rows.push_back({source.verb, source.size, run, true,
                            std::vector<std::optional<double>>(source.metrics.size())});
    }
    return;
  }
  for (const auto& sample : point.samples) {
    PerfRow row{source.verb, source.size, sample.rep, false, {}};
    for (const auto& metric : source.metrics) {
      auto it = sample.metrics.find(metric);
      row.values.push_back(it == sample.metrics.end() ? std::nullopt
                                                      : std::optional<double>(it->second));
    }
    table.rows.push_back(std::move(row));
  }
}

std::string cell(const PerfRow& row, const std::optional<double>& value) {
  if (row.failed) {
    return "FAIL";
  }
  return value ? fmt::format("{}", *value) : "N/A";
}

nlohmann::json optional_number(bool any, double value) {
  return any ? nlohmann::json(value) : nlohmann::json(nullptr);
}

}  // namespace

const char* PerfTable::name() const {
  switch (section) {
    case PerfSection::kBandwidth:
      return "bandwidth";
    case PerfSection::kLatency:
      return "latency";
    case PerfSection::kReliability:
      return "reliability";
  }
  return "";
}

std::string PerfTable::file_name() const {
  return std::string(name()) + ".csv";
}

const std::vector<std::string>& PerfTable::metrics() const {
  return section == PerfSection::kLatency ? latency_metrics() : bandwidth_metrics();
}

std::string PerfTable::csv() const {
  std::string out = section == PerfSection::kReliability ? "verb,run,size" : "verb,size";
  for (const auto& metric : metrics()) {
    out += "," + metric;
  }
  out += "\n";
  for (const auto& row : rows) {
    out += row.verb;
    if (section == PerfSection::kReliability) {
      out += fmt::format(",{}", row.run);
    }
    out += "," + row.size;
    for (const auto& value : row.values) {
      out += "," + cell(row, value);
    }
    out += "\n";
  }
  return out;
}

std::array<PerfTable, 3> perf_tables(const HistoryRecord& record) {
  std::array<PerfTable, 3> tables;
  for (std::size_t i = 0; i < tables.size(); ++i) {
    tables[i].section = kAllPerfSections[i];
  }
  auto& reliability = tables[2];
  // Per section, verb and size the samples of one point only: the first that passed, the one
  // ernicctl publishes, so that medians over the CSV are the record's. Points that did not
  // pass add their FAIL rows wherever they belong.
  std::set<std::tuple<PerfSection, std::string, std::string>> published;
  for (const auto& point : record.points()) {
    for (const auto& source : sources_of(point)) {
      PerfTable& table = tables[static_cast<std::size_t>(source.section)];
      if (!point.passed() || published.emplace(source.section, source.verb, source.size).second) {
        add_rows(point, source, table);
      }
      if (point.repetitions.value_or(1) > 1 && point.tool == "perftest" &&
          source.section == PerfSection::kBandwidth) {
        add_rows(point, source, reliability);
      }
    }
  }
  return tables;
}

nlohmann::json perf_summary(const std::array<PerfTable, 3>& tables) {
  nlohmann::json perf = nlohmann::json::object();
  for (const auto& table : tables) {
    std::vector<std::pair<std::string, std::string>> keys;  // first-seen order
    std::map<std::pair<std::string, std::string>, std::vector<const PerfRow*>> rows;
    for (const auto& row : table.rows) {
      auto key = std::make_pair(row.verb, row.size);
      if (!rows.contains(key)) {
        keys.push_back(key);
      }
      rows[key].push_back(&row);
    }
    nlohmann::json section = nlohmann::json::array();
    for (const auto& key : keys) {
      for (std::size_t column = 0; column < table.metrics().size(); ++column) {
        std::vector<double> ok;
        for (const PerfRow* row : rows[key]) {
          if (!row->failed && row->values[column]) {
            ok.push_back(*row->values[column]);
          }
        }
        auto stats = summarize(ok);
        section.push_back(
            {{"verb", key.first},
             {"size", key.second},
             {"metric", table.metrics()[column]},
             {"n", rows[key].size()},
             {"n_ok", ok.size()},
             {"mean", optional_number(stats.has_value(), stats ? stats->mean : 0)},
             {"median", optional_number(stats.has_value(), stats ? stats->median : 0)},
             {"min", optional_number(stats.has_value(), stats ? stats->min : 0)},
             {"max", optional_number(stats.has_value(), stats ? stats->max : 0)}});
      }
    }
    perf[table.name()] = std::move(section);
  }
  return perf;
}

std::size_t write_perf_csv(const std::filesystem::path& dir,
                           const std::array<PerfTable, 3>& tables) {
  for (const auto& table : tables) {
    write_file_durably(dir / table.file_name(), table.csv(), {.durability = Durability::kDerived});
  }
  return tables.size();
}

}  // namespace ernic::reports
