#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "runtime/event_loop.h"

namespace ernic::emu {

// The instance's DMA engine: copies large payloads on a thread of its own, scheduled at the
// lowest priority (SCHED_IDLE), while the event loop goes on serving doorbells and the other
// peers. On a machine whose cores are all busy moving bulk data, a waking latency-sensitive
// task (a load generator, an instance's event loop) then preempts the copy at once instead of
// waiting for a time slice (docs/emulator.md, "Copies beside the event loop").
//
// Because the thread runs only on CPU nobody else wants, a copy could wait behind unrelated
// work for ever; the loop finishes a copy itself when `rescue_after` has passed since it was
// submitted, so a busy machine slows bulk transfers no more than copying in the loop did.
class CopyEngine {
 public:
  using Token = std::uint64_t;
  struct Stats {
    std::uint64_t copies = 0;         // submitted
    std::uint64_t rescued = 0;        // finished by the loop after rescue_after
    std::uint64_t bytes_rescued = 0;  // of those, the bytes the loop copied
    bool idle_priority = false;       // the thread runs at SCHED_IDLE
  };

  // `on_done` runs on the loop's thread for every copy the engine finished (not for those
  // cancelled or finished by finish_here()); `rescued` says the loop finished it.
  using DoneFn = std::function<void(Token token, bool rescued)>;
  CopyEngine(EventLoop& loop, DoneFn on_done,
             std::chrono::microseconds rescue_after = std::chrono::milliseconds(2));
  ~CopyEngine();  // waits for the chunk in progress, abandons the rest
  CopyEngine(const CopyEngine&) = delete;
  CopyEngine& operator=(const CopyEngine&) = delete;

  Token submit(std::byte* destination, const std::byte* source, std::size_t length, bool streaming);
  // When these return the engine no longer touches the copy's memory and will not report it:
  // cancel() leaves the rest uncopied, finish_here() copies it on the calling thread.
  void cancel(Token token) { take_over(token, false); }
  void finish_here(Token token) { take_over(token, true); }
  std::size_t pending() const;
  Stats stats() const;

 private:
  struct Job {
    Token token;
    std::byte* destination;
    const std::byte* source;
    std::size_t length;
    bool streaming;
    std::size_t claimed = 0;  // bytes handed to a copier (the thread, or the loop taking over)
    int copiers = 0;          // chunks of it being copied (by the thread, by a take-over)
    bool taken = false;       // the loop took it over: no report
  };

  void run();
  // Reports the copies the thread finished; true if there were any.
  bool on_completions();
  // The oldest copy with bytes nobody claimed yet. Caller holds mutex_.
  std::deque<std::shared_ptr<Job>>::iterator first_claimable();
  // Copies the next chunk of `job`, then finishes the job if that was its last. `lock` holds
  // mutex_, and does again on return.
  void copy_claimed_chunk(std::shared_ptr<Job> job, std::unique_lock<std::mutex>& lock);
  // Returns the bytes it copied itself.
  std::size_t take_over(Token token, bool copy_rest);
  void rescue(Token token);
  void forget_rescue(Token token);
  // Next chunk of `job` to copy, claimed; length 0 when all is claimed. Caller holds mutex_.
  std::size_t claim(Job& job, std::size_t& offset);
  static void copy_chunk(const Job& job, std::size_t offset, std::size_t length);

  EventLoop& loop_;
  DoneFn on_done_;
  const std::chrono::microseconds rescue_after_;
  int done_fd_ = -1;
  mutable std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable chunk_done_;
  std::deque<std::shared_ptr<Job>> jobs_;  // not finished, in order of submission
  std::vector<Token> done_;                // finished by the thread, not reported yet
  Token next_token_ = 1;
  bool stopping_ = false;
  bool thread_sleeping_ = false;  // waiting on work_ready_: a submit must wake it
  std::atomic<std::uint64_t> submitted_{0};
  std::atomic<std::uint64_t> done_count_{0};  // copies pushed onto done_
  std::uint64_t reported_count_ = 0;          // done_count_ when done_ was last emptied
  std::atomic<bool> loop_blocking_{false};    // the loop wants the eventfd for the next one
  int poller_ = 0;
  Stats stats_;
  std::unordered_map<Token, std::uint64_t> rescue_timers_;  // the loop's own: no lock
  std::thread thread_;
};

}  // namespace ernic::emu
