#include "perf/cpu_usage.h"

#include <time.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include <fmt/format.h>

namespace ernic::emu::perf {
namespace {

double percent(double cpu, double wall) {
  return wall > 0 && cpu >= 0 ? 100.0 * cpu / wall : 0.0;
}

// The two switch counters of one thread's status file; 0 for a thread that ended meanwhile.
std::uint64_t thread_context_switches(const std::filesystem::path& status) {
  std::ifstream in(status);
  std::uint64_t total = 0;
  std::string line;
  while (std::getline(in, line)) {
    for (const char* key : {"voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:"}) {
      if (line.starts_with(key)) {
        total += std::stoull(line.substr(std::strlen(key)));
      }
    }
  }
  return total;
}

}  // namespace

double process_cpu_seconds(pid_t pid) {
  // The kernel's CPU-time clock of the process: nanoseconds and every thread, those that ended
  // too. /proc/PID/stat counts clock ticks (10 ms here), longer than a short bandwidth point,
  // whose instance then used 0 % or 100 %.
  clockid_t clock{};
  timespec t{};
  if (clock_getcpuclockid(pid, &clock) != 0 || clock_gettime(clock, &t) != 0) {
    return -1;
  }
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

std::optional<std::uint64_t> process_context_switches(pid_t pid) {
  std::error_code error;
  std::filesystem::directory_iterator tasks(fmt::format("/proc/{}/task", pid), error);
  if (error) {
    return std::nullopt;
  }
  std::uint64_t total = 0;
  bool any = false;
  for (const auto& task : tasks) {
    total += thread_context_switches(task.path() / "status");
    any = true;
  }
  return any ? std::optional(total) : std::nullopt;
}

std::optional<std::uint64_t> switches_between(std::optional<std::uint64_t> before,
                                              std::optional<std::uint64_t> after) {
  if (!before || !after || *after < *before) {
    return std::nullopt;
  }
  return *after - *before;
}

CpuMeter::CpuMeter(pid_t instance) : instance_(instance) {
  restart();
}

void CpuMeter::restart() {
  wall_ = std::chrono::steady_clock::now();
  self_ = process_cpu_seconds(getpid());
  own_switches_ = process_context_switches(getpid());
  // pid 0 (an instance in this process) would read this process's own clock.
  if (instance_ > 0) {
    instance_cpu_ = process_cpu_seconds(instance_);
    instance_switches_ = process_context_switches(instance_);
  }
}

CpuUse CpuMeter::stop() const {
  CpuUse use;
  use.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_).count();
  use.load_generator_percent = percent(process_cpu_seconds(getpid()) - self_, use.wall_seconds);
  const double instance = instance_ > 0 ? process_cpu_seconds(instance_) : -1;
  use.instance_percent =
      instance_cpu_ < 0 || instance < 0 ? 0.0 : percent(instance - instance_cpu_, use.wall_seconds);
  use.load_generator_switches = switches_between(own_switches_, process_context_switches(getpid()));
  if (instance_ > 0) {
    use.instance_switches =
        switches_between(instance_switches_, process_context_switches(instance_));
  }
  return use;
}

}  // namespace ernic::emu::perf
