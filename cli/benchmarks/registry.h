#pragma once

#include "benchmarks/benchmark.h"

namespace ernic {

// One accessor per module; registry.cc lists them.
const Benchmark& iperf3_benchmark();

}  // namespace ernic
