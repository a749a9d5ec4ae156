#include "runtime/traffic_scheduling.h"

#include "runtime/scheduling.h"

namespace ernic::emu {

TrafficScheduling::Actions TrafficScheduling::for_calling_thread() {
  return {[] { run_as_normal(kLatencySlice); }, [] { run_as_batch(); }};
}

TrafficScheduling::TrafficScheduling(std::function<std::uint64_t()> latency_requests,
                                     Actions actions, Clock::time_point now,
                                     std::chrono::milliseconds quiet)
    : latency_requests_(std::move(latency_requests)),
      actions_(std::move(actions)),
      quiet_(quiet),
      seen_(latency_requests_()),
      last_latency_(now) {
  enter(Mode::kLatency);
}

void TrafficScheduling::observe(Clock::time_point now) {
  const std::uint64_t count = latency_requests_();
  if (count != seen_) {
    seen_ = count;
    last_latency_ = now;
    if (mode_ == Mode::kBulk) {
      enter(Mode::kLatency);
    }
    return;
  }
  if (mode_ == Mode::kLatency && now - last_latency_ >= quiet_) {
    enter(Mode::kBulk);
  }
}

void TrafficScheduling::enter(Mode mode) {
  mode_ = mode;
  if (mode == Mode::kLatency) {
    ++latency_periods_;
    actions_.latency();
  } else {
    actions_.bulk();
  }
}

const char* to_string(TrafficScheduling::Mode mode) {
  return mode == TrafficScheduling::Mode::kLatency ? "latency" : "bulk";
}

}  // namespace ernic::emu
