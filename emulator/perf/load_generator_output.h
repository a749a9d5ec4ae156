#pragma once

// Private to the load generator: what one side measured for a message size, how the sides
// exchange it and the test's parameters over the OOB channel, and how it is printed and saved.

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "perf/cpu_usage.h"
#include "perf/load_generator.h"
#include "perf/oob_channel.h"
#include "perf/perftest_format.h"

namespace ernic::emu::perf {

struct SizeResult {
  BwResult bw;
  LatResult lat;
  std::vector<double> samples;
  std::vector<double> post_times;  // bandwidth: when each completed message was posted
  CpuUse cpu;                      // this side's load generator and instance while the size ran
  // Duration mode: messages completed in each second of the measured time (bandwidth), and
  // messages or exchanges in the whole run, warm-up and cool-down included (told to the server).
  std::vector<std::uint64_t> per_second;
  std::uint64_t exchanged = 0;
};

// The client's measurement as one OOB line, and back at the server.
std::string encode_result(const SizeResult& r, Mode mode);
SizeResult decode_result(const std::string& line, Mode mode);

// The client's test parameters as one OOB line.
std::string header_line(const PerfOptions& o);
// The server reads the client's parameters: `o` with the client's choices applied. Answers
// and throws when the client runs another test or sends bad parameters.
PerfOptions accept_test(OobChannel& oob, const PerfOptions& o);

// The table header for the test (bandwidth, latency, or latency in duration mode).
std::string table_header(const PerfOptions& o);
// One size's row; before it, with --report-per-second a row per measured second (bandwidth),
// with -H every measured latency and the header again (as perftest prints them).
void print_row(std::ostream& out, const SizeResult& r, const PerfOptions& o);
nlohmann::json json_of(const SizeResult& r, const PerfOptions& o);
// Writes the results to o.json, if set.
void write_json(const PerfOptions& o, const nlohmann::json& results, bool server,
                double time_to_rts_ms);

}  // namespace ernic::emu::perf
