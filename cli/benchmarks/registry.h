#pragma once

#include <vector>

#include "benchmarks/benchmark.h"

namespace ernic {

// One accessor per tool module, and the list builtin_platform() takes them from: adding a tool
// is its module file, its test and its line here.
const Benchmark& iperf3_benchmark();
const Benchmark& perftest_benchmark();
const Benchmark& pingpong_benchmark();
const Benchmark& fio_benchmark();
const Benchmark& qperf_benchmark();

inline std::vector<const Benchmark*> builtin_tools() {
  return {&iperf3_benchmark(), &perftest_benchmark(), &pingpong_benchmark(), &fio_benchmark(),
          &qperf_benchmark()};
}

}  // namespace ernic
