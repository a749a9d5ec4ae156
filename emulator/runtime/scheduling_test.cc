#include "runtime/scheduling.h"

#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <cstdio>
#include <string>
#include <thread>

namespace ernic::emu {
namespace {

// Custom slices for SCHED_OTHER came with EEVDF's slice support in Linux 6.12.
bool kernel_has_custom_slices() {
  utsname name{};
  int major = 0;
  int minor = 0;
  return uname(&name) == 0 && std::sscanf(name.release, "%d.%d", &major, &minor) == 2 &&
         (major > 6 || (major == 6 && minor >= 12));
}

// Each case runs on a thread of its own: a slice belongs to a thread, and the test runner's
// must stay as it was.
template <typename Body>
void on_own_thread(Body body) {
  std::thread thread(body);
  thread.join();
}

TEST_CASE("a thread gets the slice it asks for, and the kernel's again when it asks for none") {
  on_own_thread([] {
    const auto before = time_slice();
    REQUIRE(before.count() > 0);  // SCHED_OTHER reports the slice in force
    const auto granted = request_time_slice(kLatencySlice);
    if (!kernel_has_custom_slices()) {
      CHECK(granted == before);  // ignored, and said so by what comes back
      CHECK_FALSE(time_slices_granted());
      return;
    }
    CHECK(granted == kLatencySlice);
    CHECK(time_slice() == kLatencySlice);
    CHECK(time_slices_granted());
    CHECK(request_time_slice(std::chrono::microseconds(0)) == before);
  });
}

TEST_CASE("a batch thread keeps its nice value and the kernel's slice") {
  on_own_thread([] {
    CHECK(std::string(scheduling_policy_name()) == "normal");
    const auto slice = time_slice();
    // Raising one's own nice value needs no privilege: 5 must survive the change of policy.
    const auto me = static_cast<id_t>(gettid());
    REQUIRE(setpriority(PRIO_PROCESS, me, 5) == 0);
    const int nice_before = getpriority(PRIO_PROCESS, me);
    REQUIRE(nice_before == 5);
    REQUIRE(run_as_batch());
    CHECK(std::string(scheduling_policy_name()) == "batch");
    CHECK(time_slice() == slice);
    CHECK(getpriority(PRIO_PROCESS, me) == nice_before);
  });
  CHECK(std::string(scheduling_policy_name()) == "normal");
}

TEST_CASE("a batch thread returns to the normal policy with the slice it asks for") {
  on_own_thread([] {
    const auto kernel_slice = time_slice();
    const auto me = static_cast<id_t>(gettid());
    REQUIRE(setpriority(PRIO_PROCESS, me, 3) == 0);
    REQUIRE(run_as_batch());
    const auto slice = run_as_normal(kLatencySlice);
    CHECK(std::string(scheduling_policy_name()) == "normal");
    CHECK(slice == (kernel_has_custom_slices() ? kLatencySlice : kernel_slice));
    CHECK(getpriority(PRIO_PROCESS, me) == 3);
    REQUIRE(run_as_batch());  // and the batch policy takes the kernel's slice again
    CHECK(time_slice() == kernel_slice);
  });
}

TEST_CASE("asking for a slice on one thread leaves the others' as they were") {
  const auto mine = time_slice();
  on_own_thread([] { request_time_slice(kLatencySlice); });
  CHECK(time_slice() == mine);
}

}  // namespace
}  // namespace ernic::emu
