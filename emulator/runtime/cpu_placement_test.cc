#include "runtime/cpu_placement.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <thread>
#include <vector>

#include "test_affinity.h"

namespace ernic::emu {
namespace {

// Each case runs on a thread of its own: affinity belongs to a thread, and the test runner's
// must stay as it was.
template <typename Body>
void on_own_thread(Body body) {
  std::thread thread(body);
  thread.join();
}

TEST_CASE("a loop keeps off the CPUs its programs spin on, and takes them back when they stop") {
  const std::vector<int> cpus = allowed_cpus();
  if (cpus.size() < 2) {
    WARN("one CPU: there is nowhere else to go");
    return;
  }
  on_own_thread([&] {
    CpuPlacement placement;
    CHECK(placement.keep_off({cpus[0]}));
    std::vector<int> expected(cpus.begin() + 1, cpus.end());
    CHECK(allowed_cpus() == expected);
    CHECK_FALSE(placement.keep_off({cpus[0]}));  // already there: no system call to change it

    CHECK(placement.keep_off({}));
    CHECK(allowed_cpus() == cpus);
  });
}

TEST_CASE("a loop never gives up every CPU it may use") {
  const std::vector<int> cpus = allowed_cpus();
  on_own_thread([&] {
    CpuPlacement placement;
    CHECK_FALSE(placement.keep_off(cpus));
    CHECK(allowed_cpus() == cpus);
  });
}

TEST_CASE("a loop stays within the CPUs someone else confined it to") {
  const std::vector<int> cpus = allowed_cpus();
  if (cpus.size() < 2) {
    WARN("one CPU: nothing to confine to");
    return;
  }
  on_own_thread([&] {
    CpuPlacement placement;
    CHECK(placement.keep_off({cpus[0]}));
    pin(0, cpus[0]);  // taskset or a test moves the loop afterwards
    // The program spins where the loop was put: there is nowhere else it may go.
    CHECK_FALSE(placement.keep_off({cpus[0]}));
    CHECK(allowed_cpus() == std::vector<int>{cpus[0]});
    // Nor does it take back the CPUs it gave up before it was moved.
    CHECK_FALSE(placement.keep_off({}));
    CHECK(allowed_cpus() == std::vector<int>{cpus[0]});
  });
}

TEST_CASE("loops carrying a stream gather on the highest CPU they may use, where CPUs are few") {
  const std::vector<int> cpus = allowed_cpus();
  if (cpus.size() < 2) {
    WARN("one CPU: there is nothing to gather on");
    return;
  }
  on_own_thread([&] {
    // At most three CPUs, whatever the machine has: fewer than kEnoughCpus.
    const std::vector<int> mine(cpus.begin(), cpus.begin() + std::min<std::size_t>(3, cpus.size()));
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int cpu : mine) {
      CPU_SET(cpu, &set);
    }
    REQUIRE(sched_setaffinity(0, sizeof set, &set) == 0);
    CpuPlacement placement;
    CHECK(placement.gather());
    CHECK(allowed_cpus() == std::vector<int>{mine.back()});
    CHECK_FALSE(placement.gather());
    // The stream ended and a latency test spins on the highest CPU: the loop leaves it.
    CHECK(placement.keep_off({mine.back()}));
    CHECK(allowed_cpus() == std::vector<int>(mine.begin(), mine.end() - 1));
    CHECK(placement.gather());
    CHECK(allowed_cpus() == std::vector<int>{mine.back()});
  });
}

TEST_CASE("with a CPU for each program and loop, streaming loops stay spread") {
  const std::vector<int> cpus = allowed_cpus();
  on_own_thread([&] {
    CpuPlacement placement(static_cast<int>(cpus.size()));
    CHECK_FALSE(placement.gather());
    CHECK(allowed_cpus() == cpus);
    if (cpus.size() >= 2) {
      CHECK(placement.keep_off({cpus[0]}));
      CHECK(placement.gather());  // spread again over all of them
      CHECK(allowed_cpus() == cpus);
    }
  });
}

}  // namespace
}  // namespace ernic::emu
