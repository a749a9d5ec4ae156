#include "perf/perftest_format.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <utility>

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

// A pipelined run: message i is posted when message i - depth completed (at 0 for the first
// `depth`), as the load generator keeps `depth` in flight; `gap(i)` usec before completion i.
template <typename Gap>
std::pair<std::vector<double>, std::vector<double>> pipeline(int n, int depth, Gap gap) {
  std::vector<double> posted, completed;
  double now = 0;
  for (int i = 0; i < n; ++i) {
    now += gap(i);
    completed.push_back(now);
    posted.push_back(i < depth ? 0.0 : completed[i - depth]);
  }
  return {posted, completed};
}

TEST_CASE("BW peak: a steady run peaks at its average, a faster stretch above it") {
  auto [p1, c1] = pipeline(1000, 128, [](int) { return 10.0; });
  CHECK(peak_bytes_per_second(p1, c1, 4096, 128) == Approx(4096.0 / 10e-6));
  // 400 completions every 10 us, 200 every 5 us, 400 every 10 us.
  auto [p2, c2] = pipeline(1000, 128, [](int i) { return i >= 400 && i < 600 ? 5.0 : 10.0; });
  const double average = 4096.0 * 1000 / 9000e-6;
  const double peak = peak_bytes_per_second(p2, c2, 4096, 128);
  CHECK(peak > average * 1.05);
  CHECK(peak < 4096.0 / 5e-6);  // a window starts at a post, so never the bare fast rate
}

TEST_CASE("BW peak: completions found in a burst do not make a peak") {
  // Steady 10 us, but completions 500..627 reach the client all at once, 1280 us late (it was
  // descheduled): timed from completion to completion a window would see 128 messages in no
  // time at all.
  auto [posted, completed] = pipeline(1000, 128, [](int i) {
    return i == 500 ? 1290.0 : i > 500 && i < 628 ? 0.0 : 10.0;
  });
  const double steady = 4096.0 / 10e-6;
  CHECK(completed[627] == Approx(completed[499] + 1290));
  CHECK(peak_bytes_per_second(posted, completed, 4096, 128) < 1.5 * steady);
}

TEST_CASE("BW peak falls back to the average below two windows, and never goes below it") {
  auto [posted, completed] = pipeline(200, 128, [](int i) { return i < 100 ? 10.0 : 2.0; });
  const double average = 4096.0 * 200 / (completed.back() / 1e6);
  CHECK(peak_bytes_per_second(posted, completed, 4096, 128) == Approx(average));
  // Two windows exactly: the peak is computed (the first half ran twice as fast).
  auto [p2, c2] = pipeline(256, 128, [](int i) { return i < 128 ? 10.0 : 20.0; });
  const double average2 = 256.0 / (c2.back() / 1e6);
  CHECK(peak_bytes_per_second(p2, c2, 1, 128) == Approx(1.5 * average2));
  // Never below the average, whatever the run looked like.
  auto [p3, c3] = pipeline(1000, 128, [](int i) { return i < 900 ? 10.0 : 100.0; });
  CHECK(peak_bytes_per_second(p3, c3, 8, 128) >= 8 * 1000 / (c3.back() / 1e6));
  CHECK(peak_bytes_per_second({}, {}, 8, 128) == 0);
}

TEST_CASE("GIDs print the way perftest prints them") {
  CHECK(gid_line("10.10.0.2") == " GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:10:00:02\n");
}

// perftest's own printf formats (perftest_parameters.h: RESULT_FMT_LAT_DUR, REPORT_FMT_LAT_DUR;
// perftest_resources.c: the "-H" histogram lines).
TEST_CASE("duration-mode latency table and -H histogram in perftest's printf layouts") {
  CHECK(lat_duration_header() == " #bytes        #iterations       t_avg[usec]    tps average\n");
  LatResult r;
  r.bytes = 64;
  r.iterations = 12345;
  r.average = 3.456;
  r.transactions_per_second = 144678.9;
  char expected[256];
  std::snprintf(expected, sizeof expected, " %-7lu       %d            %-7.2f        %-7.2f\n",
                64ul, 12345, 3.456, 144678.9);
  CHECK(lat_duration_row(r) == expected);
  std::string lines = "#, usec\n";
  for (const auto& [i, v] : {std::pair{1, 1.5}, {2, 2.25}, {3, 12.3456789}, {4, 1234567.0}}) {
    std::snprintf(expected, sizeof expected, "%d, %g\n", i, v);
    lines += expected;
  }
  CHECK(histogram_lines({12.3456789, 1234567.0, 1.5, 2.25}) == lines);  // sorted, as perftest
  CHECK(time_to_rts_line(12.5) == " Time to first QP in RTS: 12.50 ms\n");
}

}  // namespace
}  // namespace ernic::emu::perf
