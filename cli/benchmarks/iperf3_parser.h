#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "benchmarks/parser.h"

namespace ernic {

// What one iperf3 -J (or --json-stream) output says.
struct Iperf3Result {
  std::string version;   // "3.12"
  std::string protocol;  // "TCP" or "UDP"
  int streams = 0;
  double duration_s = 0;
  bool reverse = false;
  std::optional<double> sender_bits_per_second;
  std::optional<double> receiver_bits_per_second;
  std::optional<long long> retransmits;
  std::optional<double> jitter_ms;     // UDP
  std::optional<double> lost_percent;  // UDP
  std::optional<double> cpu_host_percent;
  std::optional<double> cpu_remote_percent;
  int intervals = 0;          // measured intervals
  int omitted_intervals = 0;  // warm-up (-O) intervals, not part of the result
  // Every measured interval's rate (intervals[].sum.bits_per_second), in time order, and the
  // length of the first one (iperf3's -i, 1 s by default).
  std::vector<double> interval_bits_per_second;
  std::optional<double> interval_s;
  std::vector<std::string> notes;  // text around the JSON: warnings and trailing error lines

  // The figure a user means by "the bandwidth": what arrived at the receiver.
  double bandwidth_bits_per_second() const;
  nlohmann::json to_json() const;
};

// Parses the output of `iperf3 -J` (client or server side). Accepts warning lines before the
// JSON, error lines after it, -nan/nan/inf numbers, and UDP output with only end.sum (iperf3
// before 3.11). Throws ParseError naming what is wrong: an `error` field (iperf3 exits 0 on
// "Connection refused"), no JSON, or JSON without results.
Iperf3Result parse_iperf3(std::string_view text);

// For `ernicctl parse iperf3`.
ParsedFile parse_iperf3_file(std::string_view text);

}  // namespace ernic
