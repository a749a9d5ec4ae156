#include "runtime/cpu_placement.h"

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

}  // namespace
}  // namespace ernic::emu
