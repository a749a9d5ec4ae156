#include "runtime/copy_engine.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include "runtime/streaming_copy.h"

namespace ernic::emu {
namespace {
// What the thread copies between two looks at the queue: the longest a loop taking a copy
// over (cancel, finish_here) waits for it.
constexpr std::size_t kChunkBytes = 64u << 10;
// After its last copy the thread looks for the next one this long before it sleeps: a payload
// of one frame (256 KiB) takes about as long to copy as a futex wake-up, and at idle priority
// the spin only uses CPU nothing else wants.
constexpr auto kThreadSpin = std::chrono::microseconds(50);
}  // namespace

CopyEngine::CopyEngine(EventLoop& loop, DoneFn on_done, std::chrono::microseconds rescue_after)
    : loop_(loop), on_done_(std::move(on_done)), rescue_after_(rescue_after) {
  done_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (done_fd_ < 0) {
    throw std::runtime_error(std::string("eventfd: ") + std::strerror(errno));
  }
  loop_.add_fd(done_fd_, EPOLLIN, [this](std::uint32_t) {
    std::uint64_t count = 0;
    [[maybe_unused]] auto ignored = read(done_fd_, &count, sizeof count);
    on_completions();
  });
  // While the loop spins it finds finished copies itself; only a loop about to block asks for
  // the eventfd (the protocol of a client waiting on its completion queue).
  poller_ =
      loop_.add_poller({[this] {
                          loop_blocking_.store(false, std::memory_order_relaxed);
                          return on_completions();
                        },
                        [this] {
                          loop_blocking_.store(true, std::memory_order_seq_cst);
                          return done_count_.load(std::memory_order_seq_cst) == reported_count_;
                        }});
  // Signals stay with the instance's own threads (its signalfd and handlers).
  sigset_t all;
  sigset_t previous;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &previous);
  thread_ = std::thread([this] { run(); });
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

CopyEngine::~CopyEngine() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_ready_.notify_all();
  thread_.join();
  loop_.remove_poller(poller_);
  for (const auto& [token, timer] : rescue_timers_) {
    loop_.cancel_timer(timer);
  }
  loop_.remove_fd(done_fd_);
  close(done_fd_);
}

CopyEngine::Token CopyEngine::submit(std::byte* destination, const std::byte* source,
                                     std::size_t length, bool streaming) {
  Token token = 0;
  bool thread_awake = false;  // it looks at the queue before it sleeps: no wake-up
  {
    std::lock_guard lock(mutex_);
    token = next_token_++;
    auto job = std::make_shared<Job>();
    job->token = token;
    job->destination = destination;
    job->source = source;
    job->length = length;
    job->streaming = streaming;
    jobs_.push_back(std::move(job));
    ++stats_.copies;
    submitted_.fetch_add(1, std::memory_order_release);
    if (!thread_sleeping_) {
      thread_awake = true;
    }
  }
  if (!thread_awake) {
    work_ready_.notify_one();
  }
  rescue_timers_[token] =
      loop_.add_timer(EventLoop::Clock::now() + rescue_after_, [this, token] { rescue(token); });
  return token;
}

std::size_t CopyEngine::claim(Job& job, std::size_t& offset) {
  offset = job.claimed;
  const std::size_t n = std::min(kChunkBytes, job.length - job.claimed);
  job.claimed += n;
  return n;
}

void CopyEngine::copy_chunk(const Job& job, std::size_t offset, std::size_t length) {
  if (job.streaming) {
    streaming_copy(job.destination + offset, job.source + offset, length);
  } else {
    std::memcpy(job.destination + offset, job.source + offset, length);
  }
}

void CopyEngine::run() {
  pthread_setname_np(pthread_self(), "ernic-copy");
  sched_param param{};
  const bool idle = pthread_setschedparam(pthread_self(), SCHED_IDLE, &param) == 0;
  std::unique_lock lock(mutex_);
  stats_.idle_priority = idle;
  const auto claimable = [this] { return first_claimable(); };
  while (true) {
    if (!stopping_ && claimable() == jobs_.end()) {
      const std::uint64_t seen = submitted_.load(std::memory_order_acquire);
      lock.unlock();
      const auto spin_start = std::chrono::steady_clock::now();
      while (submitted_.load(std::memory_order_acquire) == seen &&
             std::chrono::steady_clock::now() - spin_start < kThreadSpin) {
        __builtin_ia32_pause();
      }
      lock.lock();
      thread_sleeping_ = true;
      work_ready_.wait(lock, [&] { return stopping_ || claimable() != jobs_.end(); });
      thread_sleeping_ = false;
    }
    if (stopping_) {
      return;
    }
    copy_claimed_chunk(*claimable(), lock);
  }
}

void CopyEngine::copy_claimed_chunk(std::shared_ptr<Job> job, std::unique_lock<std::mutex>& lock) {
  std::size_t offset = 0;
  const std::size_t n = claim(*job, offset);
  ++job->copiers;
  lock.unlock();
  copy_chunk(*job, offset, n);
  lock.lock();
  --job->copiers;
  if (job->claimed == job->length && job->copiers == 0 && !job->taken) {
    jobs_.erase(std::find(jobs_.begin(), jobs_.end(), job));
    done_.push_back(job->token);
    done_count_.fetch_add(1, std::memory_order_seq_cst);
    if (loop_blocking_.exchange(false, std::memory_order_seq_cst)) {
      const std::uint64_t one = 1;
      [[maybe_unused]] auto ignored = write(done_fd_, &one, sizeof one);
    }
  }
  chunk_done_.notify_all();
}

std::deque<std::shared_ptr<CopyEngine::Job>>::iterator CopyEngine::first_claimable() {
  return std::find_if(jobs_.begin(), jobs_.end(), [](const std::shared_ptr<Job>& j) {
    return !j->taken && j->claimed < j->length;
  });
}

bool CopyEngine::on_completions() {
  if (done_count_.load(std::memory_order_acquire) == reported_count_) {
    return false;
  }
  // One at a time: what on_done does may cancel a copy that finished too, which then must not
  // be reported.
  bool any = false;
  while (true) {
    Token token = 0;
    {
      std::lock_guard lock(mutex_);
      reported_count_ = done_count_.load(std::memory_order_relaxed);
      if (done_.empty()) {
        return any;
      }
      token = done_.front();
      done_.erase(done_.begin());
    }
    forget_rescue(token);
    on_done_(token, false);
    any = true;
  }
}

void CopyEngine::forget_rescue(Token token) {
  const auto timer = rescue_timers_.find(token);
  if (timer != rescue_timers_.end()) {
    loop_.cancel_timer(timer->second);
    rescue_timers_.erase(timer);
  }
}

std::size_t CopyEngine::take_over(Token token, bool copy_rest) {
  forget_rescue(token);
  std::unique_lock lock(mutex_);
  const auto it = std::find_if(jobs_.begin(), jobs_.end(), [token](const std::shared_ptr<Job>& j) {
    return j->token == token;
  });
  if (it == jobs_.end()) {
    std::erase(done_, token);  // finished already: now it is never reported
    return 0;
  }
  const std::shared_ptr<Job> job = *it;
  job->taken = true;
  std::size_t copied_here = 0;
  std::size_t offset = 0;
  while (copy_rest) {
    const std::size_t n = claim(*job, offset);
    if (n == 0) {
      break;
    }
    lock.unlock();
    copy_chunk(*job, offset, n);
    copied_here += n;
    lock.lock();
  }
  chunk_done_.wait(lock, [&] { return job->copiers == 0; });
  jobs_.erase(std::find(jobs_.begin(), jobs_.end(), job));
  return copied_here;
}

void CopyEngine::rescue(Token token) {
  rescue_timers_.erase(token);  // this timer has fired
  {
    std::lock_guard lock(mutex_);
    const bool pending =
        std::any_of(jobs_.begin(), jobs_.end(),
                    [token](const std::shared_ptr<Job>& j) { return j->token == token; });
    if (!pending) {
      return;  // finished: on_completions() reports it
    }
  }
  const std::size_t copied = take_over(token, true);
  {
    std::lock_guard lock(mutex_);
    ++stats_.rescued;
    stats_.bytes_rescued += copied;
  }
  on_done_(token, true);
}

std::size_t CopyEngine::pending() const {
  std::lock_guard lock(mutex_);
  return jobs_.size() + done_.size();
}

CopyEngine::Stats CopyEngine::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace ernic::emu
