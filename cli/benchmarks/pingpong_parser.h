#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "benchmarks/parser.h"

namespace ernic {

// What ibv_rc_pingpong (rdma-core) printed. A result is the pair of lines
//   <N> bytes in <T> seconds = <R> Mbit/sec
//   <N> iters in <T> seconds = <L> usec/iter
// and both are required.
struct PingpongResult {
  int line = 0;  // 1-based line of the "bytes in" line
  std::uint64_t bytes = 0;
  double bytes_seconds = 0;
  double mbit_per_sec = 0;  // as printed: 10^6 bits per second
  std::uint64_t iters = 0;
  double iters_seconds = 0;
  double usec_per_iter = 0;  // one iteration is a round trip (ping and pong)
};

struct PingpongOutput {
  // One per run; a terminal transcript may hold the server's and the client's.
  std::vector<PingpongResult> results;
  std::string local_gid;              // from the last "local address:" line; "::" means no GID
  std::string remote_gid;             // from the last "remote address:" line
  std::vector<std::string> warnings;  // lines that are neither results nor errors
  std::string error;                  // empty when every result is complete
  int error_line = 0;

  bool ok() const { return error.empty() && !results.empty(); }
};

// Reads a whole ibv_rc_pingpong output (stdout and stderr, merged or not). Never throws.
PingpongOutput parse_pingpong_output(std::string_view text);

// bw_Mbps (as printed), bw_GBs (Mbit/s / 8000), lat_per_iter_us (round trip per iteration).
std::map<std::string, double> pingpong_metrics(const PingpongResult& result);

// `ernicctl parse pingpong FILE`.
nlohmann::json pingpong_output_to_json(const PingpongOutput& output);
ParsedFile parse_pingpong_file(std::string_view text);
OutputParser pingpong_output_parser();

}  // namespace ernic
