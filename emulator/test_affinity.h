// CPU affinity for the emulator's tests: which CPUs a test may use, and a thread held on one.
#pragma once

#include <sched.h>
#include <sys/types.h>

#include <cerrno>
#include <system_error>
#include <vector>

namespace ernic::emu {

// The CPUs thread `tid` (0: the calling one) may run on, lowest first.
inline std::vector<int> allowed_cpus(pid_t tid = 0) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(tid, sizeof set, &set) != 0) {
    throw std::system_error(errno, std::generic_category(), "sched_getaffinity");
  }
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) {
      cpus.push_back(cpu);
    }
  }
  return cpus;
}

// Confines thread `tid` (0: the calling one) to `cpu`.
inline void pin(pid_t tid, int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(tid, sizeof set, &set) != 0) {
    throw std::system_error(errno, std::generic_category(), "sched_setaffinity");
  }
}

// Pins the calling thread (and the processes it starts meanwhile) to one CPU for its lifetime
// and gives it back its CPUs after.
class PinnedThread {
 public:
  explicit PinnedThread(int cpu) {
    if (sched_getaffinity(0, sizeof before_, &before_) != 0) {
      throw std::system_error(errno, std::generic_category(), "sched_getaffinity");
    }
    pin(0, cpu);
  }
  ~PinnedThread() { sched_setaffinity(0, sizeof before_, &before_); }
  PinnedThread(const PinnedThread&) = delete;
  PinnedThread& operator=(const PinnedThread&) = delete;

 private:
  cpu_set_t before_{};
};

}  // namespace ernic::emu
