#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

namespace ernic::emu {

// How an instance's event loop presents itself to the scheduler, by the traffic it carries.
// With the copy thread (`--mesh-copy-thread`) bulk copies are not on the loop, and a loop on a
// short slice preempts whatever runs when it wakes. That is what a loop carrying a latency
// test needs, and what hurts it when every instance does it: on two cores, the loops of the
// instances that only move bulk data woke as often and as early as the ones on the latency
// path. So a loop runs on the short slice while latency requests pass through it
// (EngineStats::latency_requests) and, after `quiet` without any, as a batch task, which never
// preempts on waking (docs/emulator-performance-log.md, "Scheduling by traffic").
class TrafficScheduling {
 public:
  using Clock = std::chrono::steady_clock;
  enum class Mode { kLatency, kBulk };
  struct Actions {
    std::function<void()> latency;  // on entering Mode::kLatency (also at the start)
    std::function<void()> bulk;     // on entering Mode::kBulk
  };
  // For the calling thread: SCHED_OTHER on kLatencySlice, or SCHED_BATCH on the kernel's slice.
  static Actions for_calling_thread();
  // Longer than any pause of a latency test between two requests, short beside a benchmark
  // point.
  static constexpr std::chrono::milliseconds kQuiet{50};

  // Starts in Mode::kLatency (an instance serves the first request of any kind promptly).
  TrafficScheduling(std::function<std::uint64_t()> latency_requests, Actions actions,
                    Clock::time_point now, std::chrono::milliseconds quiet = kQuiet);
  // Once per turn of the event loop: a counter read unless the mode changes.
  void observe(Clock::time_point now);

  Mode mode() const { return mode_; }
  // How often the loop entered Mode::kLatency, the start included.
  std::uint64_t latency_periods() const { return latency_periods_; }

 private:
  void enter(Mode mode);

  std::function<std::uint64_t()> latency_requests_;
  Actions actions_;
  std::chrono::milliseconds quiet_;
  Mode mode_ = Mode::kLatency;
  std::uint64_t seen_ = 0;
  Clock::time_point last_latency_;
  std::uint64_t latency_periods_ = 0;
};

const char* to_string(TrafficScheduling::Mode mode);

}  // namespace ernic::emu
