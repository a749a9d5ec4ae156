#include "benchmarks/registry.h"

namespace ernic {

const std::vector<const Benchmark*>& all_benchmarks() {
  static const std::vector<const Benchmark*> benchmarks = {
      &iperf3_benchmark(),
      &perftest_benchmark(),
      &pingpong_benchmark(),
      &fio_benchmark(),
  };
  return benchmarks;
}

const Benchmark* find_benchmark(std::string_view tool) {
  for (const Benchmark* benchmark : all_benchmarks()) {
    if (benchmark->tool() == tool) {
      return benchmark;
    }
  }
  return nullptr;
}

}  // namespace ernic
