#pragma once

#include <sched.h>

#include <vector>

namespace ernic::emu {

// Keeps the calling thread (an instance's event loop) off the CPUs where the programs it serves
// spin. On fewer CPUs than spinners, a loop that shares a CPU with a program that spins without
// yielding (perftest's ib_write_lat on its buffer's last byte) waits for the scheduler's slice
// to end: 2 ms a message instead of 3 us, measured with each program pinned beside its own
// instance. Beside the peer's program instead, each loop finds its CPU free whenever its own
// program waits on it (docs/emulator.md, "Where the instances run").
//
// It narrows the thread's affinity within what it was given: the CPUs allowed when first asked,
// or those someone else set since (a test, taskset, a cgroup's cpuset), never all of them.
//
// A bandwidth test wants the opposite: the loop that copies should not share a CPU with a
// spinning program at all, since the scheduler gives the spinner half of it however often it
// yields. So loops carrying a stream gather on one CPU, the same one for every instance (the
// highest they may use), and the programs get the rest: ib_send_bw 1 MiB 18-21 GB/s that way,
// 13-14 with each loop beside the peer's program. Only where CPUs are scarce (kEnoughCpus).
class CpuPlacement {
 public:
  // Two programs and two loops: with this many CPUs each has one, and loops do not gather.
  static constexpr int kEnoughCpus = 4;

  explicit CpuPlacement(int enough_cpus = kEnoughCpus) : enough_cpus_(enough_cpus) {}
  // Restricts the calling thread to its allowed CPUs minus `busy`, or to all of them when that
  // would leave none. Returns whether its affinity changed.
  bool keep_off(const std::vector<int>& busy);
  // Restricts the calling thread to the highest CPU it may use, when it may use fewer than
  // `enough_cpus`, and to all of them otherwise. Returns whether its affinity changed.
  bool gather();

 private:
  // Reads the thread's affinity into `now` and, when first asked or after someone else changed
  // it, takes it as what the thread may use. False when it cannot be read.
  bool learn_allowed(cpu_set_t& now);
  // Sets the thread's affinity to `wanted` unless it is `now` already; whether it changed.
  bool confine(const cpu_set_t& now, const cpu_set_t& wanted);

  int enough_cpus_;
  cpu_set_t allowed_{};
  cpu_set_t set_by_us_{};
  bool known_ = false;
};

}  // namespace ernic::emu
