#include "benchmarks/iperf3_parser.h"
#include "benchmarks/parser.h"

namespace ernic {

const std::vector<OutputParser>& all_parsers() {
  static const std::vector<OutputParser> parsers = {
      {"iperf3", "iperf3 -J or --json-stream output (client or server side)", &parse_iperf3_file},
  };
  return parsers;
}

}  // namespace ernic
