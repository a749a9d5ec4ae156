#include "commands/run_outputs.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "run/testing/test_run.h"

namespace ernic {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A run like the quickstart's: send/write bandwidth and send latency at the tracked sizes, a
// repeated 64 KiB point, TCP both ways, one failed point.
testing::TestRun quickstart_like(const fs::path& dir) {
  testing::TestRun run(dir / "runs" / "20261130T054000Z-test");
  fs::create_directories(run.run.run_dir);
  run.scenario.history.enabled = true;
  run.scenario.history.path = dir / "perf" / "history.jsonl";
  double base = 0.3;
  for (const char* size : {"4096", "65536", "1048576", "8388608"}) {
    base *= 2;
    run.add("perftest", fmt::format("bw[verb=send,size={}]", size),
            {{"verb", "send"}, {"mode", "bw"}, {"size", size}},
            {{{"bw_peak_GBs", base + 0.1}, {"bw_avg_GBs", base}, {"msg_rate_mpps", 0.1}},
             {{"bw_peak_GBs", base + 0.3}, {"bw_avg_GBs", base}, {"msg_rate_mpps", 0.1}},
             {{"bw_peak_GBs", base + 0.2}, {"bw_avg_GBs", base}, {"msg_rate_mpps", 0.1}}});
    run.add("perftest", fmt::format("lat[verb=send,size={}]", size),
            {{"verb", "send"}, {"mode", "lat"}, {"size", size}},
            {{{"lat_min_us", 200}, {"lat_typical_us", 240 / base}, {"lat_max_us", 900}},
             {{"lat_min_us", 210}, {"lat_typical_us", 250 / base}, {"lat_max_us", 800}}});
  }
  run.add("perftest", "bw[verb=write,size=4096]",
          {{"verb", "write"}, {"mode", "bw"}, {"size", "4096"}}, {}, PointStatus::kFailed, 1,
          "ib_write_bw exited 1");
  run.add("perftest", "reliability[verb=send,size=65536]",
          {{"verb", "send"}, {"mode", "bw"}, {"size", "65536"}},
          {{{"bw_peak_GBs", 9.0}, {"bw_avg_GBs", 8.0}},
           {{"bw_peak_GBs", 9.5}, {"bw_avg_GBs", 8.5}},
           {{"bw_peak_GBs", 9.9}, {"bw_avg_GBs", 8.9}}});
  run.add("iperf3", "tcp[protocol=tcp,reverse=false]", {{"protocol", "tcp"}, {"reverse", "false"}},
          {{{"bandwidth_GBs", 0.34}}, {{"bandwidth_GBs", 0.38}}});
  run.add("iperf3", "tcp[protocol=tcp,reverse=true]", {{"protocol", "tcp"}, {"reverse", "true"}},
          {{{"bandwidth_GBs", 5.0}}});
  return run;
}

const nlohmann::json& perf_row(const nlohmann::json& summary, const char* section,
                               const std::string& verb, const std::string& size,
                               const std::string& metric) {
  static const nlohmann::json none;
  for (const auto& row : summary["perf"][section]) {
    if (row["verb"] == verb && row["size"] == size && row["metric"] == metric) {
      return row;
    }
  }
  return none;
}

struct TempDir {
  fs::path path = fs::temp_directory_path() / fmt::format("ernic-run-outputs-{}", ::getpid());
  TempDir() { fs::remove_all(path); }
  ~TempDir() { fs::remove_all(path); }
};

TEST_CASE("summary.json is a superset of rocm-ernic's report format", "[run_outputs]") {
  TempDir dir;
  auto run = quickstart_like(dir.path);
  write_run_outputs(run.scenario, run.plan, run.finish(RunStatus::kFailed), true);
  auto summary = nlohmann::json::parse(read_file(run.run.run_dir / "summary.json"));

  const auto& meta = summary["meta"];
  for (const char* key : {"run_id", "sha", "ref", "node", "accel", "generated"}) {
    INFO(key);
    CHECK(meta[key].is_string());
  }
  CHECK(meta["generated"] == "2026-05-28 20:26:52 UTC");
  CHECK(meta["accel"] == "none");
  const auto& functional = summary["functional"];
  for (const char* key : {"total", "passed", "failed", "skipped"}) {
    INFO(key);
    CHECK(functional[key].is_number_unsigned());
  }
  CHECK(functional["total"] == 12);
  CHECK(functional["passed"] == 11);
  CHECK(functional["failed"] == 1);
  CHECK(functional["skipped"] == 0);
  for (const char* section : {"bandwidth", "latency", "reliability"}) {
    INFO(section);
    REQUIRE(summary["perf"][section].is_array());
    REQUIRE_FALSE(summary["perf"][section].empty());
    for (const auto& row : summary["perf"][section]) {
      CHECK(row["verb"].is_string());
      CHECK(row["size"].is_string());
      CHECK(row["metric"].is_string());
      CHECK(row["n"].is_number_unsigned());
      CHECK(row["n_ok"].is_number_unsigned());
      for (const char* stat : {"mean", "median", "min", "max"}) {
        CHECK((row[stat].is_number() || (row[stat].is_null() && row["n_ok"] == 0)));
      }
    }
  }
  CHECK(summary["perf_csv_files"] == 3);
  CHECK(summary["regressions"] == nlohmann::json::array());
  // ernicctl's own keys stay beside them
  for (const char* key : {"badges", "error", "history", "points", "run_dir", "series", "status"}) {
    INFO(key);
    CHECK(summary.contains(key));
  }
  CHECK(summary["status"] == "failed");

  // The history line's series and badges are what rocm-ernic's publisher extracts from perf.
  std::string line = read_file(run.scenario.history.path);
  auto record = nlohmann::json::parse(line.substr(0, line.find('\n')));
  REQUIRE(record["series"]["bandwidth"].size() == 3);
  REQUIRE(record["series"]["latency"].size() == 3);
  for (const auto& size : run.scenario.history.tracked_sizes) {
    std::string key = std::to_string(size);
    INFO(key);
    CHECK(record["series"]["bandwidth"][key] ==
          perf_row(summary, "bandwidth", "send", key, "bw_peak_GBs")["median"]);
    CHECK(record["series"]["latency"][key] ==
          perf_row(summary, "latency", "send", key, "lat_typical_us")["median"]);
  }
  CHECK(record["badges"]["rdma_bw_GBs"] ==
        perf_row(summary, "bandwidth", "send", "1048576", "bw_peak_GBs")["median"]);
  CHECK(record["badges"]["tcp_bw_GBs"] ==
        perf_row(summary, "bandwidth", "tcp", "stream", "bw_avg_GBs")["median"]);
  CHECK(record["badges"]["tcp_bw_GBs"].get<double>() == Approx(0.36));
  // the second 64 KiB point is reliability data only: it does not move the 64 KiB median
  CHECK(perf_row(summary, "reliability", "send", "65536", "bw_peak_GBs")["n"] == 6);
  CHECK(perf_row(summary, "bandwidth", "send", "65536", "bw_peak_GBs")["n"] == 3);
  CHECK(summary["series"] == record["series"]);
  CHECK(summary["badges"] == record["badges"]);
}

TEST_CASE("a run directory holds rocm-ernic's perf-csv/ and junit/", "[run_outputs]") {
  TempDir dir;
  auto run = quickstart_like(dir.path);
  write_run_outputs(run.scenario, run.plan, run.finish(RunStatus::kFailed), true);
  const auto& run_dir = run.run.run_dir;
  std::string bandwidth = read_file(run_dir / "perf-csv" / "bandwidth.csv");
  CHECK(bandwidth.rfind("verb,size,bw_peak_GBs,bw_avg_GBs,msg_rate_mpps\n", 0) == 0);
  CHECK(bandwidth.find("\nwrite,4096,FAIL,FAIL,FAIL\n") != std::string::npos);
  CHECK(bandwidth.find("\ntcp,stream,N/A,0.34,N/A\ntcp,stream,N/A,0.38,N/A\n") !=
        std::string::npos);
  CHECK(read_file(run_dir / "perf-csv" / "latency.csv")
            .rfind("verb,size,lat_min_us,lat_typical_us,lat_max_us\n", 0) == 0);
  std::string reliability = read_file(run_dir / "perf-csv" / "reliability.csv");
  INFO(reliability);
  CHECK(reliability.rfind("verb,run,size,bw_peak_GBs,bw_avg_GBs,msg_rate_mpps\n", 0) == 0);
  CHECK(reliability.find("\nsend,1,65536,9,8,N/A\nsend,2,65536,9.5,8.5,N/A\nsend,3,65536,9.9,8.9,"
                         "N/A\n") != std::string::npos);
  CHECK(read_file(run_dir / "junit" / "junit.xml") == read_file(run_dir / "junit.xml"));
  CHECK(read_file(run_dir / "junit.xml").find("<testcase") != std::string::npos);
  CHECK_FALSE(fs::exists(run.scenario.history.path.string() + ".lock"));
}

TEST_CASE("the record reaches the history though the run directory takes no file",
          "[run_outputs]") {
  TempDir dir;
  auto run = quickstart_like(dir.path);
  const auto& run_dir = run.run.run_dir;
  // A directory where record.json goes and a file where perf-csv/ goes: both writes fail.
  fs::create_directories(run_dir / "record.json");
  std::ofstream(run_dir / "perf-csv") << "in the way\n";
  RunOutputs outputs =
      write_run_outputs(run.scenario, run.plan, run.finish(RunStatus::kFailed), true);
  CHECK(outputs.record_saved);
  CHECK_FALSE(outputs.all_files_written);
  std::string history = read_file(run.scenario.history.path);
  REQUIRE(std::count(history.begin(), history.end(), '\n') == 1);
  CHECK(nlohmann::json::parse(history)["run_id"] == "20261130T054000Z-test");
  // What comes after the failed files is still written.
  CHECK(fs::exists(run_dir / "summary.json"));
  CHECK(fs::exists(run_dir / "junit.xml"));
}

TEST_CASE("a history that cannot be written leaves the record in record.json, not saved",
          "[run_outputs]") {
  TempDir dir;
  auto run = quickstart_like(dir.path);
  fs::create_directories(run.scenario.history.path);  // a directory: the append fails
  RunOutputs outputs =
      write_run_outputs(run.scenario, run.plan, run.finish(RunStatus::kPassed), true);
  CHECK_FALSE(outputs.record_saved);
  CHECK(outputs.all_files_written);
  auto record = nlohmann::json::parse(read_file(run.run.run_dir / "record.json"));
  CHECK(record["run_id"] == "20261130T054000Z-test");
  CHECK(nlohmann::json::parse(read_file(run.run.run_dir / "summary.json"))["history"].is_null());
}

TEST_CASE("a record that neither the run directory nor the history takes goes to the temp dir",
          "[run_outputs]") {
  TempDir dir;
  auto run = quickstart_like(dir.path);
  fs::create_directories(run.scenario.history.path);
  fs::create_directories(run.run.run_dir / "record.json");
  auto fallback = fs::temp_directory_path() / "ernicctl-record-20261130T054000Z-test.json";
  fs::remove(fallback);
  RunOutputs outputs =
      write_run_outputs(run.scenario, run.plan, run.finish(RunStatus::kPassed), true);
  CHECK_FALSE(outputs.record_saved);
  REQUIRE(fs::exists(fallback));
  CHECK(nlohmann::json::parse(read_file(fallback))["run_id"] == "20261130T054000Z-test");
  fs::remove(fallback);
}

}  // namespace
}  // namespace ernic
