#include "runtime/cpu_placement.h"

namespace ernic::emu {

bool CpuPlacement::learn_allowed(cpu_set_t& now) {
  if (sched_getaffinity(0, sizeof now, &now) != 0) {
    return false;
  }
  if (!known_ || !CPU_EQUAL(&now, &set_by_us_)) {
    allowed_ = now;  // first asked, or moved by someone else since: that is what we may use
    set_by_us_ = now;
    known_ = true;
  }
  return true;
}

bool CpuPlacement::confine(const cpu_set_t& now, const cpu_set_t& wanted) {
  if (CPU_EQUAL(&wanted, &now) || sched_setaffinity(0, sizeof wanted, &wanted) != 0) {
    return false;
  }
  set_by_us_ = wanted;
  return true;
}

bool CpuPlacement::keep_off(const std::vector<int>& busy) {
  cpu_set_t now;
  if (!learn_allowed(now)) {
    return false;
  }
  cpu_set_t wanted = allowed_;
  for (int cpu : busy) {
    if (cpu >= 0 && cpu < CPU_SETSIZE) {
      CPU_CLR(cpu, &wanted);
    }
  }
  if (CPU_COUNT(&wanted) == 0) {
    wanted = allowed_;
  }
  return confine(now, wanted);
}

bool CpuPlacement::gather() {
  cpu_set_t now;
  if (!learn_allowed(now)) {
    return false;
  }
  if (CPU_COUNT(&allowed_) >= enough_cpus_) {
    return confine(now, allowed_);
  }
  int highest = CPU_SETSIZE - 1;
  while (highest > 0 && !CPU_ISSET(highest, &allowed_)) {
    --highest;  // allowed_ is never empty: the kernel refuses an empty affinity
  }
  cpu_set_t wanted;
  CPU_ZERO(&wanted);
  CPU_SET(highest, &wanted);
  return confine(now, wanted);
}

}  // namespace ernic::emu
