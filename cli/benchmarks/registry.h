#pragma once

#include "benchmarks/benchmark.h"

namespace ernic {

// One accessor per module; registry.cc lists them.
const Benchmark& iperf3_benchmark();
const Benchmark& perftest_benchmark();
const Benchmark& pingpong_benchmark();
const Benchmark& fio_benchmark();

}  // namespace ernic
