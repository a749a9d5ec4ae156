#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

namespace ernic::emu {

// The one event loop of an instance: epoll for sockets and eventfds, precise deadlines through
// epoll_pwait2, and a bounded spin after activity. It never sleep-polls: when the spin window
// has passed without work it blocks until an fd is ready or the next deadline.
class EventLoop {
 public:
  using Clock = std::chrono::steady_clock;
  using FdHandler = std::function<void(std::uint32_t events)>;
  // A poller is asked for work on every spin iteration (e.g. shared-memory rings); it returns
  // true when it found some. `prepare_to_block` runs before blocking and returns false when it
  // found work after all (so the loop must not block).
  struct Poller {
    std::function<bool()> poll;
    std::function<bool()> prepare_to_block;
  };

  explicit EventLoop(std::chrono::microseconds spin = std::chrono::microseconds(50));
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  void add_fd(int fd, std::uint32_t events, FdHandler handler);
  void modify_fd(int fd, std::uint32_t events);
  void remove_fd(int fd);
  int add_poller(Poller poller);
  void remove_poller(int id);
  // Runs `task` at `when` (once). Returns an id for cancel_timer.
  std::uint64_t add_timer(Clock::time_point when, std::function<void()> task);
  void cancel_timer(std::uint64_t id);
  // Wakes the loop at `when` to ask its pollers again, for memory nobody rings (a guest region);
  // unlike a timer, not counted as work, so the loop blocks again at once when they find none.
  std::uint64_t wake_at(Clock::time_point when) { return add_timer(when, nullptr); }
  // Called when the pollers did work and after each fd handler, so that what one produced
  // (frames to write, completions to notify: batched here) does not wait for the next one.
  void set_after_work(std::function<void()> hook) { after_work_ = std::move(hook); }
  // Extra deadline source (the engine's RNR timers) and what to run when it passes.
  void set_deadline_source(std::function<std::optional<Clock::time_point>()> source,
                           std::function<void()> on_deadline);

  void run();  // until stop()
  // Runs turns until `done()` holds (true), or `deadline` passes or stop() was called (false):
  // for a caller that runs the loop inside its own waits (an in-loop device).
  bool run_until(const std::function<bool()>& done, Clock::time_point deadline);
  void stop();  // safe from handlers
  // Lets run() go again after a stop() (a fuzz harness drives the loop in steps).
  void restart() { stop_ = false; }
  bool stopping() const { return stop_; }
  // Yields after fd handlers that took longer than kSlowYield to give the CPU back (a CPU-bound
  // neighbour's time slice); each one stops yielding between turns for kNoTurnYields.
  std::uint64_t slow_yields() const { return slow_yields_; }
  static constexpr auto kSlowYield = std::chrono::milliseconds(1);
  static constexpr auto kNoTurnYields = std::chrono::milliseconds(100);
  // The yield after a turn that used its budget with more to do (see event_loop.cc); for work
  // that goes on in pollers (a payload by reference copied over turns).
  void yield_between_turns();

 private:
  bool run_due_timers();
  // One pass: timers, pollers, then epoll (blocking, once the spin window has passed without
  // work, until an fd, the next deadline or `return_by`).
  void turn(std::optional<Clock::time_point> return_by);
  std::optional<Clock::time_point> next_deadline() const;

  int epoll_fd_ = -1;
  std::chrono::microseconds spin_;
  bool stop_ = false;
  std::unordered_map<int, std::shared_ptr<FdHandler>> handlers_;
  std::unordered_map<int, Poller> pollers_;
  int next_poller_ = 1;
  struct Timer {
    Clock::time_point when;
    std::uint64_t id;
    std::function<void()> task;
  };
  std::vector<Timer> timers_;
  std::uint64_t next_timer_ = 1;
  std::function<void()> after_work_;
  std::function<std::optional<Clock::time_point>()> deadline_source_;
  std::function<void()> on_deadline_;
  Clock::time_point last_work_ = Clock::now();
  bool fds_ready_ = false;  // the last epoll wait returned events
  Clock::time_point turn_yields_from_{};
  std::uint64_t slow_yields_ = 0;
};

}  // namespace ernic::emu
