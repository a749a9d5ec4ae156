#include "benchmarks/fio_parser.h"
#include "benchmarks/iperf3_parser.h"
#include "benchmarks/parser.h"
#include "benchmarks/perftest_parser.h"
#include "benchmarks/pingpong_parser.h"

namespace ernic {

const std::vector<OutputParser>& all_parsers() {
  static const std::vector<OutputParser> parsers = {
      {"iperf3", "iperf3 -J or --json-stream output (client or server side)", &parse_iperf3_file},
      perftest_output_parser(),
      pingpong_output_parser(),
      fio_output_parser(),
  };
  return parsers;
}

}  // namespace ernic
