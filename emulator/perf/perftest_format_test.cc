#include "perf/perftest_format.h"

#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

namespace ernic::emu::perf {
namespace {

std::string sample_line(const std::string& file, const std::string& starts_with) {
  std::ifstream in(std::string(ERNIC_SAMPLES_DIR) + "/" + file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(starts_with, 0) == 0) {
      return line + "\n";
    }
  }
  return "missing";
}

TEST_CASE("bandwidth rows and header match perftest byte for byte") {
  const std::string expected = sample_line("ib_send_bw_s65536.client.txt", " 65536 ");
  BwResult r;
  r.bytes = 65536;
  r.iterations = 1000;
  r.peak_bytes_per_second = 9.86 * 1048576;
  r.average_bytes_per_second = 8.29 * 1048576;
  r.message_rate = 133;
  CHECK(bw_row(r, false) == expected);
  CHECK(bw_header(false) == sample_line("ib_send_bw_s65536.client.txt", " #bytes"));
}

TEST_CASE("latency rows and header match perftest byte for byte") {
  LatResult r{64, 1000, 1909.10, 52816.43, 23112.66, 23473.27, 2801.51, 30174.04, 52816.43};
  CHECK(lat_row(r) == sample_line("ib_send_lat_s64.client.txt", " 64 "));
  CHECK(lat_header() == sample_line("ib_send_lat_s64.client.txt", " #bytes"));
}

TEST_CASE("latency summary: median, percentiles, extremes") {
  std::vector<double> samples;
  for (int i = 1000; i >= 1; --i) {
    samples.push_back(i);
  }
  const LatResult r = summarize_latency(4096, samples);
  CHECK(r.min == 1);
  CHECK(r.max == 1000);
  CHECK(r.typical == 501);
  CHECK(r.p99 == 990);
  CHECK(r.p999 == 999);
  CHECK(r.average == Approx(500.5));
}

TEST_CASE("Gb/sec is decimal bits, as perftest reports it") {
  BwResult r;
  r.bytes = 4096;
  r.iterations = 5000;
  r.peak_bytes_per_second = 92.13e9 / 8;
  r.average_bytes_per_second = 92.06e9 / 8;
  r.message_rate = 2.809574e6;
  CHECK_THAT(bw_row(r, true),
             Catch::Contains("92.13") && Catch::Contains("92.06") && Catch::Contains("2.809574"));
  CHECK_THAT(bw_header(true), Catch::Contains("BW peak[Gb/sec]"));
}

TEST_CASE("GIDs print the way perftest prints them") {
  CHECK(gid_line("10.10.0.2") == " GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:10:00:02\n");
}

}  // namespace
}  // namespace ernic::emu::perf
