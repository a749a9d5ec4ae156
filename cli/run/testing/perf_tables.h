// What the embedded load generator prints (perftest's layout), for tests that script a fake
// client's output.
#pragma once

#include <string>

#include "perf/perftest_format.h"

namespace ernic::testing {

// A 64 KiB write bandwidth test's banner and table header, its one row at `gb_per_s`, and the
// whole table.
inline std::string bandwidth_head() {
  namespace perf = emu::perf;
  return perf::banner(perf::Verb::kWrite, perf::Mode::kBandwidth, false, 1, 128) +
         perf::bw_header(true);
}
inline std::string bandwidth_row(double gb_per_s) {
  return emu::perf::bw_row({.bytes = 65536,
                            .iterations = 100,
                            .peak_bytes_per_second = gb_per_s * 1e9,
                            .average_bytes_per_second = gb_per_s * 1e9,
                            .message_rate = gb_per_s * 1e9 / 65536},
                           true);
}
inline std::string bandwidth_table(double gb_per_s) {
  return bandwidth_head() + bandwidth_row(gb_per_s) + emu::perf::dashes();
}

// A 4 KiB send latency test of four iterations (3 to 5 us).
inline std::string latency_table() {
  namespace perf = emu::perf;
  return perf::banner(perf::Verb::kSend, perf::Mode::kLatency, false, 1, 1) + perf::lat_header() +
         perf::lat_row(perf::summarize_latency(4096, {3.0, 3.5, 4.0, 5.0})) + perf::dashes();
}

}  // namespace ernic::testing
