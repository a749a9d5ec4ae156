#include "perf/cpu_usage.h"
#include "common/file_text.h"

#include <time.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include <fmt/format.h>

namespace ernic::emu::perf {
namespace {

double own_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

double percent(double cpu, double wall) {
  return wall > 0 && cpu >= 0 ? 100.0 * cpu / wall : 0.0;
}

}  // namespace

double process_cpu_seconds(pid_t pid) {
  const std::string text = read_file_text(fmt::format("/proc/{}/stat", pid));
  // The command name (field 2) may contain spaces: count fields after its closing parenthesis.
  const auto close = text.rfind(')');
  if (close == std::string::npos) {
    return -1;
  }
  std::istringstream rest(text.substr(close + 2));
  std::string field;
  unsigned long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) {
      utime = std::stoul(field);
    } else if (i == 15) {
      stime = std::stoul(field);
    }
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

CpuMeter::CpuMeter(pid_t instance) : instance_(instance) {
  restart();
}

void CpuMeter::restart() {
  wall_ = std::chrono::steady_clock::now();
  self_ = own_cpu_seconds();
  instance_cpu_ = process_cpu_seconds(instance_);
}

CpuUse CpuMeter::stop() const {
  CpuUse use;
  use.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_).count();
  use.load_generator_percent = percent(own_cpu_seconds() - self_, use.wall_seconds);
  const double instance = process_cpu_seconds(instance_);
  use.instance_percent =
      instance_cpu_ < 0 || instance < 0 ? 0.0 : percent(instance - instance_cpu_, use.wall_seconds);
  return use;
}

}  // namespace ernic::emu::perf
