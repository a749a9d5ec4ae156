#include "runtime/scheduling.h"

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <optional>
#include <thread>

namespace ernic::emu {
namespace {

// glibc 2.36 has no wrapper for sched_setattr/sched_getattr; this is the kernel's layout.
struct SchedAttr {
  std::uint32_t size;
  std::uint32_t policy;
  std::uint64_t flags;
  std::int32_t nice;
  std::uint32_t priority;
  std::uint64_t runtime_ns;  // for SCHED_OTHER: the requested slice
  std::uint64_t deadline_ns;
  std::uint64_t period_ns;
  std::uint32_t util_min;
  std::uint32_t util_max;
};

bool read_attr(SchedAttr& attr) {
  attr = {};
  return syscall(SYS_sched_getattr, 0, &attr, sizeof attr, 0) == 0;
}

// The policies of the fair class, whose slice is what sched_runtime says.
bool fair_policy(std::uint32_t policy) {
  return policy == SCHED_OTHER || policy == SCHED_BATCH;
}

// Writes the calling thread's attributes back with `slice` and, if given, another fair policy;
// the nice value stays. A kernel that refuses (or ignores) the slice leaves it as it was, which
// the caller sees in what time_slice() says afterwards.
void set_fair_attributes(std::optional<std::uint32_t> policy, std::chrono::microseconds slice) {
  SchedAttr attr;
  if (!read_attr(attr) || !fair_policy(attr.policy)) {
    return;
  }
  attr.size = sizeof attr;
  attr.flags = 0;
  attr.policy = policy.value_or(attr.policy);
  attr.runtime_ns = static_cast<std::uint64_t>(slice.count()) * 1000;
  syscall(SYS_sched_setattr, 0, &attr, 0);
}

}  // namespace

std::chrono::microseconds time_slice() {
  SchedAttr attr;
  if (!read_attr(attr) || !fair_policy(attr.policy)) {
    return std::chrono::microseconds(0);
  }
  return std::chrono::microseconds(attr.runtime_ns / 1000);
}

std::chrono::microseconds request_time_slice(std::chrono::microseconds slice) {
  set_fair_attributes(std::nullopt, slice);
  return time_slice();
}

std::chrono::microseconds run_as_normal(std::chrono::microseconds slice) {
  set_fair_attributes(SCHED_OTHER, slice);
  return time_slice();
}

bool time_slices_granted() {
  bool granted = false;
  std::thread probe([&granted] { granted = request_time_slice(kLatencySlice) == kLatencySlice; });
  probe.join();
  return granted;
}

bool run_as_batch() {
  // Through sched_setattr with a zero slice: sched_setscheduler would keep a slice asked for
  // earlier.
  set_fair_attributes(SCHED_BATCH, std::chrono::microseconds(0));
  return sched_getscheduler(0) == SCHED_BATCH;
}

const char* scheduling_policy_name() {
  switch (sched_getscheduler(0)) {
    case SCHED_OTHER:
      return "normal";
    case SCHED_BATCH:
      return "batch";
    case SCHED_IDLE:
      return "idle";
    default:
      return "other";
  }
}

}  // namespace ernic::emu
