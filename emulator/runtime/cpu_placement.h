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
class CpuPlacement {
 public:
  // Restricts the calling thread to its allowed CPUs minus `busy`, or to all of them when that
  // would leave none. Returns whether its affinity changed.
  bool keep_off(const std::vector<int>& busy);

 private:
  cpu_set_t allowed_{};
  cpu_set_t set_by_us_{};
  bool known_ = false;
};

}  // namespace ernic::emu
