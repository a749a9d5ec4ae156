#include "runtime/scheduling.h"

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
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

}  // namespace

std::chrono::microseconds time_slice() {
  SchedAttr attr;
  if (!read_attr(attr) || !fair_policy(attr.policy)) {
    return std::chrono::microseconds(0);
  }
  return std::chrono::microseconds(attr.runtime_ns / 1000);
}

std::chrono::microseconds request_time_slice(std::chrono::microseconds slice) {
  SchedAttr attr;
  if (read_attr(attr) && fair_policy(attr.policy)) {
    // Only the slice changes: the policy and nice value read back are written again as they
    // are. A kernel that refuses (or ignores) the request leaves the slice as it was, which the
    // caller sees in what is returned.
    attr.size = sizeof attr;
    attr.flags = 0;
    attr.runtime_ns = static_cast<std::uint64_t>(slice.count()) * 1000;
    syscall(SYS_sched_setattr, 0, &attr, 0);
  }
  return time_slice();
}

bool time_slices_granted() {
  bool granted = false;
  std::thread probe([&granted] { granted = request_time_slice(kLatencySlice) == kLatencySlice; });
  probe.join();
  return granted;
}

bool run_as_batch() {
  const sched_param param{};
  return sched_setscheduler(0, SCHED_BATCH, &param) == 0;
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
