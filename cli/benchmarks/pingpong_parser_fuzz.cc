// libFuzzer target: the ibv_rc_pingpong parser must accept any bytes without crashing, and what
// it reports must always serialize to JSON.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "benchmarks/pingpong_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  ernic::PingpongOutput output = ernic::parse_pingpong_output(text);
  for (const auto& result : output.results) {
    (void)ernic::pingpong_metrics(result);
  }
  (void)ernic::parse_pingpong_file(text).data.dump();
  return 0;
}
