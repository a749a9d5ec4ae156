// libFuzzer target: the iperf3 parser must turn any input into a result or a ParseError.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "benchmarks/iperf3_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    auto result = ernic::parse_iperf3(text);
    (void)result.to_json().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  } catch (const ernic::ParseError&) {
  }
  return 0;
}
