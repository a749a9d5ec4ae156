#include "runtime/event_loop.h"

#include <sched.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace ernic::emu {

EventLoop::EventLoop(std::chrono::microseconds spin) : spin_(spin) {
  // Blocking waits with a deadline would otherwise overshoot by the default 50 us slack.
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) {
    throw std::runtime_error(std::string("epoll_create1: ") + std::strerror(errno));
  }
}

EventLoop::~EventLoop() {
  close(epoll_fd_);
}

void EventLoop::add_fd(int fd, std::uint32_t events, FdHandler handler) {
  epoll_event ev{};
  ev.events = events;
  ev.data.fd = fd;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
    throw std::runtime_error(std::string("epoll_ctl add: ") + std::strerror(errno));
  }
  handlers_[fd] = std::make_shared<FdHandler>(std::move(handler));
}

void EventLoop::modify_fd(int fd, std::uint32_t events) {
  epoll_event ev{};
  ev.events = events;
  ev.data.fd = fd;
  epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &ev);
}

void EventLoop::remove_fd(int fd) {
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  handlers_.erase(fd);
}

int EventLoop::add_poller(Poller poller) {
  const int id = next_poller_++;
  pollers_[id] = std::move(poller);
  return id;
}

void EventLoop::remove_poller(int id) {
  pollers_.erase(id);
}

std::uint64_t EventLoop::add_timer(Clock::time_point when, std::function<void()> task) {
  const std::uint64_t id = next_timer_++;
  timers_.push_back({when, id, std::move(task)});
  return id;
}

void EventLoop::cancel_timer(std::uint64_t id) {
  std::erase_if(timers_, [id](const Timer& t) { return t.id == id; });
}

void EventLoop::set_deadline_source(std::function<std::optional<Clock::time_point>()> source,
                                    std::function<void()> on_deadline) {
  deadline_source_ = std::move(source);
  on_deadline_ = std::move(on_deadline);
}

void EventLoop::stop() {
  stop_ = true;
}

std::optional<EventLoop::Clock::time_point> EventLoop::next_deadline() const {
  std::optional<Clock::time_point> earliest;
  for (const Timer& t : timers_) {
    if (!earliest || t.when < *earliest) {
      earliest = t.when;
    }
  }
  if (deadline_source_) {
    auto d = deadline_source_();
    if (d && (!earliest || *d < *earliest)) {
      earliest = d;
    }
  }
  return earliest;
}

bool EventLoop::run_due_timers() {
  const auto now = Clock::now();
  bool ran = false;
  std::vector<Timer> due;
  for (auto it = timers_.begin(); it != timers_.end();) {
    if (it->when <= now) {
      due.push_back(std::move(*it));
      it = timers_.erase(it);
    } else {
      ++it;
    }
  }
  for (Timer& t : due) {
    if (t.task) {
      t.task();
      ran = true;
    }
  }
  if (deadline_source_) {
    auto d = deadline_source_();
    if (d && *d <= now) {
      on_deadline_();
      ran = true;
    }
  }
  return ran;
}

void EventLoop::yield_between_turns() {
  // A connection's turn ends at its byte budget with the rest still to move. Yielding then lets
  // the processes beside this one (a latency test's load generator and instances among bulk
  // ones, on two cores) run between turns, as long as they give the CPU back soon. A CPU-bound
  // neighbour keeps it for its time slice (4-16 ms on this machine), which after every 128 KiB
  // turn cut a 128-iteration 4 MiB send_bw from 1 s to 19 s: after such a yield the turns go
  // on without yielding for a while (the kernel's preemption still shares the CPU).
  const auto before = Clock::now();
  if (before < turn_yields_from_) {
    return;
  }
  sched_yield();
  const auto after = Clock::now();
  if (after - before > kSlowYield) {
    ++slow_yields_;
    turn_yields_from_ = after + kNoTurnYields;
  }
}

void EventLoop::run() {
  while (!stop_) {
    turn(std::nullopt);
  }
}

bool EventLoop::run_until(const std::function<bool()>& done, Clock::time_point deadline) {
  while (!done()) {
    if (stop_ || Clock::now() >= deadline) {
      return false;
    }
    turn(deadline);
  }
  return true;
}

void EventLoop::turn(std::optional<Clock::time_point> return_by) {
  bool worked = run_due_timers();
  bool polled = false;
  for (auto& [id, poller] : pollers_) {
    polled |= poller.poll();
  }
  if (polled && after_work_) {
    // What a doorbell posted goes out now, not after the fd handlers' turns (bulk I/O).
    after_work_();
  }
  worked |= polled;
  const auto now = Clock::now();
  if (worked) {
    last_work_ = now;
  }
  bool block = !worked && now - last_work_ >= spin_;
  if (!worked && !block) {
    if (!fds_ready_) {
      // Spinning: let a runnable process (a client, the peer instance) have the CPU first.
      sched_yield();
    } else {
      yield_between_turns();
    }
  }
  if (block) {
    for (auto& [id, poller] : pollers_) {
      if (poller.prepare_to_block && !poller.prepare_to_block()) {
        block = false;
      }
    }
  }
  timespec timeout{0, 0};
  timespec* timeout_ptr = &timeout;
  if (block) {
    auto deadline = next_deadline();
    if (return_by && (!deadline || *return_by < *deadline)) {
      deadline = return_by;
    }
    if (!deadline) {
      timeout_ptr = nullptr;  // nothing scheduled: wait for an fd
    } else {
      const auto wait = std::max(Clock::duration::zero(), *deadline - Clock::now());
      const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(wait).count();
      timeout.tv_sec = ns / 1000000000;
      timeout.tv_nsec = ns % 1000000000;
    }
  }
  epoll_event events[64];
  const int n = epoll_pwait2(epoll_fd_, events, 64, timeout_ptr, nullptr);
  if (n < 0 && errno != EINTR) {
    throw std::runtime_error(std::string("epoll_pwait2: ") + std::strerror(errno));
  }
  for (int i = 0; i < n; ++i) {
    auto it = handlers_.find(events[i].data.fd);
    if (it == handlers_.end()) {
      continue;
    }
    auto handler = it->second;  // keeps it alive if the handler removes its own fd
    (*handler)(events[i].events);
    // A completion or a reply one handler produced goes out before the next handler's turn.
    if (after_work_) {
      after_work_();
    }
  }
  fds_ready_ = n > 0;
  if (n > 0) {
    last_work_ = Clock::now();
  } else if (worked && after_work_) {
    after_work_();
  }
}

}  // namespace ernic::emu
