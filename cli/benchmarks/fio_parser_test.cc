#include "benchmarks/fio_parser.h"

#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "samples.h"

namespace ernic {
namespace {

using testing::read_sample;

TEST_CASE("fio 3.33 JSON after a note: line, nanoseconds converted", "[fio]") {
  FioOutput output = parse_fio_output(read_sample("fio-3.33-json-with-note-prefix.txt"));
  REQUIRE(output.ok());
  CHECK(output.version == "fio-3.33");
  REQUIRE(output.notes.size() == 1);
  CHECK_THAT(output.notes[0], Catch::StartsWith("line 1: note: both iodepth >= 1"));
  REQUIRE(output.jobs.size() == 1);
  const FioJob& job = output.jobs[0];
  CHECK(job.name == "task_0");
  CHECK(job.rw == "write");
  CHECK(job.bs == "4k");  // from the global options
  CHECK_FALSE(job.read.active());
  CHECK(job.write.iops == Approx(476118.226321));
  CHECK(job.write.bw_bytes_per_second == Approx(1950180255.0));
  CHECK(job.write.total_ios == 33554432);
  CHECK(job.write.clat.mean_us == Approx(1.894879822));
  CHECK(job.write.clat.percentile(99.0) == Approx(2.256));
  CHECK(job.write.clat.percentile(99.9) == Approx(4.080));
  CHECK(job.write.lat.mean_us == Approx(1.929203544));

  auto metrics = fio_metrics(output);
  CHECK(metrics.at("iops") == Approx(476118.226321));
  CHECK(metrics.at("iops_M") == Approx(0.476118226321));
  CHECK(metrics.at("bw_avg_GBs") == Approx(1.950180255));
  CHECK(metrics.at("write_bw_GBs") == Approx(1.950180255));
  CHECK(metrics.at("read_iops") == 0.0);
  CHECK(metrics.at("clat_p50_us") == Approx(1.864));
  CHECK(metrics.at("clat_p99_us") == Approx(2.256));
  CHECK(metrics.at("clat_p999_us") == Approx(4.080));
  CHECK(metrics.at("clat_mean_us") == Approx(1.894879822));
}

TEST_CASE("fio 2.17 JSON: usec latencies, bw in KiB/s, two jobs", "[fio]") {
  FioOutput output = parse_fio_output(read_sample("fio-2.17-json-pkb-testdata.json"));
  REQUIRE(output.ok());
  CHECK(output.version == "fio-2.17");
  CHECK(output.notes.empty());
  REQUIRE(output.jobs.size() == 2);
  const FioJob& reader = output.jobs[0];
  CHECK(reader.name == "rand_16k_read_100%-io-depth-1-num-jobs-2");
  CHECK(reader.rw == "randread");
  CHECK(reader.bs == "16k");
  CHECK(reader.read.iops == Approx(8086.673998));
  CHECK(reader.read.bw_bytes_per_second == Approx(129386.0 * 1024));
  CHECK(reader.read.clat.mean_us == Approx(238.357679));
  CHECK(reader.read.clat.percentile(99.0) == Approx(1352));
  CHECK(reader.read.clat.percentile(99.9) == Approx(1896));
  // fio 2 pads percentile lists with "0.00": 0 entries; they are not percentiles.
  CHECK(reader.read.clat.percentiles_us.count(0.0) == 0);
  const FioJob& writer = output.jobs[1];
  CHECK(writer.rw == "randwrite");
  CHECK(writer.write.iops == Approx(2457.017193));
  CHECK(writer.write.total_ios == 24580);

  auto metrics = fio_metrics(output);
  CHECK(metrics.at("read_iops") == Approx(8086.673998));
  CHECK(metrics.at("write_iops") == Approx(2457.017193));
  CHECK(metrics.at("iops") == Approx(8086.673998 + 2457.017193));
  CHECK(metrics.at("bw_avg_GBs") == Approx((129386.0 + 39312.0) * 1024 / 1e9));
  // The worst job: the writer's p99 (2384 us) over the reader's (1352 us).
  CHECK(metrics.at("clat_p99_us") == Approx(2384));
  CHECK(metrics.at("clat_p999_us") == Approx(5728));
  double expected_mean = (238.357679 * 80891 + 800.193694 * 24580) / (80891 + 24580);
  CHECK(metrics.at("clat_mean_us") == Approx(expected_mean));
}

TEST_CASE("fio failures are named", "[fio]") {
  FioOutput none = parse_fio_output("fio: failed parsing rw=sideways\n");
  CHECK_FALSE(none.ok());
  CHECK_THAT(none.error, Catch::StartsWith("no JSON object found") &&
                             Catch::Contains("fio: failed parsing rw=sideways"));

  std::string text = read_sample("fio-3.33-json-with-note-prefix.txt");
  FioOutput truncated = parse_fio_output(text.substr(0, text.size() / 2));
  CHECK_FALSE(truncated.ok());
  CHECK_THAT(truncated.error, Catch::Contains("JSON is not valid"));
  CHECK(truncated.error_line > 1);

  FioOutput job_error = parse_fio_output(
      R"({"fio version": "fio-3.33", "jobs": [{"jobname": "ernic", "error": 2,
          "read": {"iops": 0, "bw_bytes": 0}}]})");
  CHECK_FALSE(job_error.ok());
  CHECK_THAT(job_error.error, Catch::Contains("job 'ernic' failed with error 2") &&
                                  Catch::Contains("No such file or directory"));

  FioOutput no_jobs = parse_fio_output(R"({"fio version": "fio-3.33"})");
  CHECK_THAT(no_jobs.error, Catch::Contains("no \"jobs\" array"));

  FioOutput empty = parse_fio_output("");
  CHECK_FALSE(empty.ok());
}

TEST_CASE("fio lines after the JSON are kept as notes", "[fio]") {
  std::string text = read_sample("fio-3.33-json-with-note-prefix.txt");
  FioOutput output = parse_fio_output(text + "fio: file hash not empty on exit\n");
  REQUIRE(output.ok());
  REQUIRE(output.notes.size() == 2);
  CHECK_THAT(output.notes[1], Catch::EndsWith("fio: file hash not empty on exit"));
}

TEST_CASE("fio parse JSON: per job and metrics", "[fio]") {
  ParsedFile file = parse_fio_file(read_sample("fio-2.17-json-pkb-testdata.json"));
  CHECK(file.error.empty());
  CHECK(file.data.at("jobs").size() == 2);
  CHECK(file.data.at("jobs").at(0).at("read").at("clat").at("percentiles_us").at("99") ==
        Approx(1352));
  CHECK(file.data.at("metrics").at("write_iops") == Approx(2457.017193));
  ParsedFile failed = parse_fio_file("garbage\n");
  CHECK_THAT(failed.error, Catch::StartsWith("fio: no JSON object found"));
}

}  // namespace
}  // namespace ernic

namespace ernic {
namespace {

TEST_CASE("fio --status-interval: every cumulative report, the final one as the result", "[fio]") {
  FioOutput output = parse_fio_output(read_sample("fio-3.33-json-status-interval.txt"));
  INFO(output.error);
  REQUIRE(output.ok());
  REQUIRE(output.progress.size() == 4);
  CHECK(output.progress[0].runtime_ms == 870);
  CHECK(output.progress[0].io_bytes == 44490752u + 44339200u);
  CHECK(output.progress[3].runtime_ms == 3001);
  CHECK(output.progress[3].io_bytes == 156585984u + 156459008u);
  // The jobs are the final report's.
  REQUIRE(output.jobs.size() == 1);
  CHECK(output.jobs[0].read.io_bytes == 156585984u);
  CHECK(output.jobs[0].read.runtime_ms == 3001);

  std::vector<double> rates = fio_interval_rates(output, 1000);
  REQUIRE(rates.size() == 3);  // 870, 1003 and 1005 ms; the final 123 ms are left out
  CHECK(rates[0] == Approx((44490752.0 + 44339200.0) / 0.870));
  CHECK(rates[2] == Approx((150978560.0 + 151011328.0 - 100495360.0 - 100155392.0) / 1.005));
}

TEST_CASE("fio reports: hand-made intervals, a broken report and text after the last", "[fio]") {
  auto report = [](double runtime_ms, std::uint64_t bytes) {
    return fmt::format(
        "{{\"fio version\": \"fio-3.33\", \"jobs\": [{{\"jobname\": \"j\", \"error\": 0, "
        "\"read\": {{\"io_bytes\": {}, \"runtime\": {}, \"iops\": 1, \"total_ios\": 1}}}}]}}\n",
        bytes, runtime_ms);
  };
  std::string text =
      report(1000, 100) + report(2000, 300) + report(3000, 600) + "fio: a note after the result\n";
  FioOutput output = parse_fio_output(text);
  INFO(output.error);
  REQUIRE(output.ok());
  CHECK(fio_interval_rates(output, 1000) == std::vector<double>{100, 200, 300});
  REQUIRE(output.notes.size() == 1);
  CHECK(output.notes[0] == "line 4: fio: a note after the result");
  // An interval far from the status interval (a lone final report) is not progress.
  CHECK(fio_interval_rates(parse_fio_output(report(10000, 5000)), 1000).empty());

  // A report cut short (fio killed mid-write) is an error naming its line.
  FioOutput cut = parse_fio_output(report(1000, 100) + "{\"fio version\": \"fio-3.33\", \"jo");
  CHECK_FALSE(cut.ok());
  CHECK(cut.error_line == 2);
  CHECK_THAT(cut.error, Catch::StartsWith("line 2: fio's JSON is not valid"));
}

}  // namespace
}  // namespace ernic
