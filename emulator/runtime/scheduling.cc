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

}  // namespace

std::chrono::microseconds time_slice() {
  SchedAttr attr;
  if (!read_attr(attr) || attr.policy != SCHED_OTHER) {
    return std::chrono::microseconds(0);
  }
  return std::chrono::microseconds(attr.runtime_ns / 1000);
}

std::chrono::microseconds request_time_slice(std::chrono::microseconds slice) {
  SchedAttr attr;
  if (read_attr(attr) && attr.policy == SCHED_OTHER) {
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

}  // namespace ernic::emu
