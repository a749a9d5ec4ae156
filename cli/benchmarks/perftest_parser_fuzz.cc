// libFuzzer target: the perftest parser must accept any bytes without crashing, and what it
// reports must always serialize to JSON.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "benchmarks/perftest_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  ernic::PerftestOutput output = ernic::parse_perftest_output(text);
  for (const auto& table : output.tables) {
    for (const auto& row : table.rows) {
      (void)ernic::perftest_row_metrics(table, row);
    }
  }
  ernic::ParsedFile file = ernic::parse_perftest_file(text);
  (void)file.data.dump();  // throws (and so fails the fuzzer) on invalid UTF-8
  return 0;
}
