// libFuzzer target: the fio parser must accept any bytes without crashing, and what it reports
// must always serialize to JSON.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "benchmarks/fio_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  ernic::FioOutput output = ernic::parse_fio_output(text);
  (void)ernic::fio_metrics(output);
  (void)ernic::parse_fio_file(text).data.dump();
  return 0;
}
