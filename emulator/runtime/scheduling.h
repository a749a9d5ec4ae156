#pragma once

#include <chrono>

namespace ernic::emu {

// Time slices of Linux's EEVDF scheduler (6.12 and later). A task that asks for a short slice
// gets an early deadline when it wakes, so it preempts a CPU-bound task at once instead of
// waiting out that task's slice (1.4 ms here): beside bulk tenants on two cores, the
// difference between a latency test's p99 at 10-24 x its solo p99 and at about 3 x
// (docs/emulator-performance-log.md, "Scheduler slices and system calls"). The kernel clamps a
// slice to [100 us, 100 ms].

// The slice a latency-sensitive thread asks for: the shortest the kernel grants.
inline constexpr std::chrono::microseconds kLatencySlice{100};

// Asks for `slice` for the calling thread (zero: the kernel's default again) and returns the
// slice in force afterwards: the same on a kernel without custom slices, which ignores the
// request.
std::chrono::microseconds request_time_slice(std::chrono::microseconds slice);

// Moves the calling thread back to SCHED_OTHER (from SCHED_BATCH) with `slice` (zero: the
// kernel's); the nice value stays. Returns the slice in force afterwards.
std::chrono::microseconds run_as_normal(std::chrono::microseconds slice);

// The calling thread's slice in force (the kernel's default unless one was asked for).
std::chrono::microseconds time_slice();

// Whether this kernel grants a requested slice (asked on a short-lived thread of its own).
bool time_slices_granted();

// Moves the calling thread to SCHED_BATCH (its nice value stays): for work that always has
// something queued, such as a bandwidth test, which then never preempts a waking task (a
// latency test's) on a shared core. Returns whether the kernel agreed.
bool run_as_batch();

// The calling thread's policy as a word: "normal", "batch", "idle" or "other".
const char* scheduling_policy_name();

}  // namespace ernic::emu
