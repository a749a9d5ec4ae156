#include "perf_csv.h"

#include <catch2/catch.hpp>
#include <map>
#include <sstream>

#include "history/statistics.h"
#include "testing/fixtures.h"

using namespace ernic::reports;

namespace {

// A point with several metrics per sample, as perftest records them.
nlohmann::json point_with(const std::string& id, const std::string& tool,
                          const nlohmann::json& params,
                          const std::vector<std::map<std::string, double>>& samples,
                          const std::string& status = "passed", int repetitions = 0) {
  auto point = testing::make_point(id, tool, params, "unused", "", "higher", {}, status,
                                   status == "passed" ? "" : "it broke");
  point["repetitions"] = repetitions > 0 ? repetitions : static_cast<int>(samples.size());
  point["samples"] = nlohmann::json::array();
  for (std::size_t i = 0; i < samples.size(); ++i) {
    point["samples"].push_back({{"rep", i + 1}, {"warm", i > 0}, {"metrics", samples[i]}});
  }
  return point;
}

ernic::HistoryRecord sample_run() {
  nlohmann::json points = nlohmann::json::array();
  points.push_back(point_with(
      "bw[verb=send,size=4096]", "perftest", {{"verb", "send"}, {"mode", "bw"}, {"size", "4096"}},
      {{{"bw_peak_GBs", 0.39}, {"bw_avg_GBs", 0.3}, {"msg_rate_mpps", 0.07}},
       {{"bw_peak_GBs", 0.41}, {"bw_avg_GBs", 0.31}, {"msg_rate_mpps", 0.08}},
       {{"bw_peak_GBs", 0.38}, {"bw_avg_GBs", 0.29}, {"msg_rate_mpps", 0.07}}}));
  points.push_back(point_with("bw[verb=write,size=4096]", "perftest",
                              {{"verb", "write"}, {"mode", "bw"}, {"size", "4096"}}, {}, "failed",
                              2));
  points.push_back(point_with(
      "lat[verb=send,size=4096]", "perftest", {{"verb", "send"}, {"mode", "lat"}, {"size", "4096"}},
      {{{"lat_min_us", 200.0}, {"lat_typical_us", 242.48}, {"lat_max_us", 400.0}}}));
  points.push_back(
      point_with("rel[verb=send,size=65536]", "perftest",
                 {{"verb", "send"}, {"mode", "bw"}, {"size", "65536"}},
                 {{{"bw_peak_GBs", 2.4}, {"bw_avg_GBs", 2.3}, {"msg_rate_mpps", 0.04}},
                  {{"bw_peak_GBs", 2.5}, {"bw_avg_GBs", 2.4}, {"msg_rate_mpps", 0.04}}}));
  points.push_back(point_with("tcp[protocol=tcp,reverse=false]", "iperf3",
                              {{"protocol", "tcp"}, {"reverse", "false"}},
                              {{{"bandwidth_GBs", 0.34}}, {{"bandwidth_GBs", 0.36}}}));
  points.push_back(point_with("tcp[protocol=tcp,reverse=true]", "iperf3",
                              {{"protocol", "tcp"}, {"reverse", "true"}},
                              {{{"bandwidth_GBs", 9.0}}}));
  points.push_back(point_with("nvmeof[bs=4096]", "fio", {{"bs", "4096"}},
                              {{{"bw_avg_GBs", 0.6}, {"iops_M", 0.152}}}));
  return ernic::read_history_record(
      testing::make_record("42", "2026-11-30 05:40:00 UTC", "self-hosted", points));
}

std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells;
    std::istringstream cells_in(line);
    for (std::string cell; std::getline(cells_in, cell, ',');) {
      cells.push_back(cell);
    }
    rows.push_back(cells);
  }
  return rows;
}

// Median of one column over the rows of a verb and size, as rocm-ernic's report computes it:
// numeric cells only.
std::optional<double> csv_median(const std::vector<std::vector<std::string>>& rows,
                                 const std::string& verb, const std::string& size,
                                 const std::string& column) {
  const auto& header = rows[0];
  auto at = [&](const std::string& name) {
    return static_cast<std::size_t>(std::find(header.begin(), header.end(), name) - header.begin());
  };
  std::vector<double> values;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    if (rows[i][at("verb")] == verb && rows[i][at("size")] == size) {
      const std::string& cell = rows[i][at(column)];
      if (cell != "FAIL" && cell != "N/A") {
        values.push_back(std::stod(cell));
      }
    }
  }
  if (values.empty()) {
    return std::nullopt;
  }
  return ernic::median(values);
}

}  // namespace

TEST_CASE("perf CSVs: rocm-ernic's headers, one row per sample, FAIL for failed samples") {
  auto record = sample_run();
  auto tables = perf_tables(record);
  REQUIRE(tables[0].file_name() == "bandwidth.csv");
  REQUIRE(tables[1].file_name() == "latency.csv");
  REQUIRE(tables[2].file_name() == "reliability.csv");
  auto bandwidth = tables[0].csv();
  auto latency = tables[1].csv();
  auto reliability = tables[2].csv();
  CHECK(bandwidth.rfind("verb,size,bw_peak_GBs,bw_avg_GBs,msg_rate_mpps\n", 0) == 0);
  CHECK(latency.rfind("verb,size,lat_min_us,lat_typical_us,lat_max_us\n", 0) == 0);
  CHECK(reliability.rfind("verb,run,size,bw_peak_GBs,bw_avg_GBs,msg_rate_mpps\n", 0) == 0);
  CHECK(bandwidth ==
        "verb,size,bw_peak_GBs,bw_avg_GBs,msg_rate_mpps\n"
        "send,4096,0.39,0.3,0.07\n"
        "send,4096,0.41,0.31,0.08\n"
        "send,4096,0.38,0.29,0.07\n"
        "write,4096,FAIL,FAIL,FAIL\n"  // a failed point: one FAIL row per planned repetition
        "write,4096,FAIL,FAIL,FAIL\n"
        "send,65536,2.4,2.3,0.04\n"
        "send,65536,2.5,2.4,0.04\n"
        "tcp,stream,N/A,0.34,N/A\n"  // iperf3 measures no peak and no message rate
        "tcp,stream,N/A,0.36,N/A\n"
        "nvmeof,4096,N/A,0.6,0.152\n");
  CHECK(latency == "verb,size,lat_min_us,lat_typical_us,lat_max_us\nsend,4096,200,242.48,400\n");
  // every repeated perftest bandwidth point, failed ones included, is reliability data
  CHECK(reliability ==
        "verb,run,size,bw_peak_GBs,bw_avg_GBs,msg_rate_mpps\n"
        "send,1,4096,0.39,0.3,0.07\n"
        "send,2,4096,0.41,0.31,0.08\n"
        "send,3,4096,0.38,0.29,0.07\n"
        "write,1,4096,FAIL,FAIL,FAIL\n"
        "write,2,4096,FAIL,FAIL,FAIL\n"
        "send,1,65536,2.4,2.3,0.04\n"
        "send,2,65536,2.5,2.4,0.04\n");
}

TEST_CASE("medians computed from the CSVs equal the record's") {
  auto record = sample_run();
  auto tables = perf_tables(record);
  auto bandwidth = parse_csv(tables[0].csv());
  auto latency = parse_csv(tables[1].csv());
  for (const auto& point : record.points()) {
    if (!point.passed() || point.tool != "perftest") {
      continue;
    }
    const auto& rows = point.param("mode") == "lat" ? latency : bandwidth;
    for (const auto& metric : point.measured_metrics()) {
      INFO(point.id << " " << metric);
      CHECK(csv_median(rows, point.param("verb"), point.param("size"), metric) ==
            point.median(metric));
    }
  }
  CHECK(csv_median(bandwidth, "tcp", "stream", "bw_avg_GBs") == Approx(0.35));
  CHECK_FALSE(csv_median(bandwidth, "write", "4096", "bw_peak_GBs"));
}

TEST_CASE("the perf summary has rocm-ernic's rows, statistics over the numeric cells") {
  auto perf = perf_summary(perf_tables(sample_run()));
  REQUIRE(perf["bandwidth"].is_array());
  REQUIRE(perf["latency"].is_array());
  REQUIRE(perf["reliability"].is_array());
  auto find = [&](const char* section, const std::string& verb, const std::string& size,
                  const std::string& metric) {
    for (const auto& row : perf[section]) {
      if (row["verb"] == verb && row["size"] == size && row["metric"] == metric) {
        return row;
      }
    }
    return nlohmann::json();
  };
  auto send = find("bandwidth", "send", "4096", "bw_peak_GBs");
  CHECK(send["n"] == 3);
  CHECK(send["n_ok"] == 3);
  CHECK(send["mean"].get<double>() == Approx(1.18 / 3));
  CHECK(send["median"] == 0.39);
  CHECK(send["min"] == 0.38);
  CHECK(send["max"] == 0.41);
  std::vector<std::string> keys;
  for (const auto& [key, value] : send.items()) {
    keys.push_back(key);
  }
  CHECK(keys == std::vector<std::string>{"max", "mean", "median", "metric", "min", "n", "n_ok",
                                         "size", "verb"});
  auto failed = find("bandwidth", "write", "4096", "bw_avg_GBs");
  CHECK(failed["n"] == 2);
  CHECK(failed["n_ok"] == 0);
  CHECK(failed["median"].is_null());
  CHECK(find("bandwidth", "tcp", "stream", "bw_avg_GBs")["median"] == 0.35);
  CHECK(find("latency", "send", "4096", "lat_typical_us")["median"] == 242.48);
  CHECK(find("reliability", "send", "65536", "bw_avg_GBs")["n"] == 2);
  CHECK(find("reliability", "write", "4096", "bw_avg_GBs")["n_ok"] == 0);
}

TEST_CASE("write_perf_csv writes every table") {
  testing::TempDir dir;
  CHECK(write_perf_csv(dir / "perf-csv", perf_tables(sample_run())) == 3);
  CHECK(testing::read_text(dir / "perf-csv/latency.csv") ==
        "verb,size,lat_min_us,lat_typical_us,lat_max_us\nsend,4096,200,242.48,400\n");
  CHECK(std::filesystem::exists(dir / "perf-csv/bandwidth.csv"));
  CHECK(std::filesystem::exists(dir / "perf-csv/reliability.csv"));
}
