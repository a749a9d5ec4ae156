#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>

namespace ernic::emu::perf {

// CPU seconds (user + system, all threads) a process has used so far, to the nanosecond; a
// negative value when the process is gone.
double process_cpu_seconds(pid_t pid);

// Context switches (voluntary and not) of all of a process's threads so far, from
// /proc/PID/task/*/status; nothing when the process cannot be read. On a machine with fewer
// CPUs than busy processes, each hand-off between them is a switch, and a switch can cost more
// than the work around it (docs/emulator-performance-log.md, "Where send_lat's trip goes").
std::optional<std::uint64_t> process_context_switches(pid_t pid);

// The switches between two counts of the same processes; nothing when either is missing (or
// the processes changed between them).
std::optional<std::uint64_t> switches_between(std::optional<std::uint64_t> before,
                                              std::optional<std::uint64_t> after);

// What a load generator and the instance it drives used while one measurement ran, in percent
// of one core (100 = a core busy throughout).
struct CpuUse {
  double wall_seconds = 0;
  double load_generator_percent = 0;
  double instance_percent = 0;
  // Context switches in the same time; nothing when a process could not be read.
  std::optional<std::uint64_t> load_generator_switches;
  std::optional<std::uint64_t> instance_switches;
};

// Measures CpuUse between its construction (or restart()) and stop().
class CpuMeter {
 public:
  // `instance` 0: the instance runs in this process, and its use is the load generator's.
  explicit CpuMeter(pid_t instance);
  void restart();
  CpuUse stop() const;

 private:
  pid_t instance_;
  std::chrono::steady_clock::time_point wall_;
  double self_ = 0;
  double instance_cpu_ = -1;
  std::optional<std::uint64_t> own_switches_;
  std::optional<std::uint64_t> instance_switches_;
};

}  // namespace ernic::emu::perf
