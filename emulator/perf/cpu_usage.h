#pragma once

#include <sys/types.h>

#include <chrono>

namespace ernic::emu::perf {

// CPU seconds (user + system) a process has used so far, from /proc/PID/stat (clock-tick
// resolution, 10 ms here); a negative value when the process cannot be read.
double process_cpu_seconds(pid_t pid);

// What a load generator and the instance it drives used while one measurement ran, in percent
// of one core (100 = a core busy throughout).
struct CpuUse {
  double wall_seconds = 0;
  double load_generator_percent = 0;
  double instance_percent = 0;
};

// Measures CpuUse between its construction (or restart()) and stop().
class CpuMeter {
 public:
  explicit CpuMeter(pid_t instance);
  void restart();
  CpuUse stop() const;

 private:
  pid_t instance_;
  std::chrono::steady_clock::time_point wall_;
  double self_ = 0;
  double instance_cpu_ = 0;
};

}  // namespace ernic::emu::perf
