#include "base/status.h"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "base/units.h"

namespace ernic {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

class PlainStatus final : public Status {
 public:
  void phase(std::string_view what) override { line(fmt::format("{}", what)); }
  void point_started(int index, int total, std::string_view id, int repetition,
                     int repetitions) override {
    line(repetitions > 1 ? fmt::format("[{}/{}] {} (repetition {}/{})", index + 1, total, id,
                                       repetition, repetitions)
                         : fmt::format("[{}/{}] {}", index + 1, total, id));
  }
  void point_finished(int index, int total, std::string_view id, bool passed,
                      std::string_view outcome) override {
    line(fmt::format("[{}/{}] {} {}: {}", index + 1, total, id, passed ? "passed" : "FAILED",
                     outcome));
  }
  void warning(std::string_view text) override { line(fmt::format("warning: {}", text)); }
  void finish() override {}

 private:
  void line(const std::string& text) {
    std::lock_guard lock(mutex_);
    std::fprintf(stderr, "[%7.2fs] %s\n", seconds_since(start_), text.c_str());
    std::fflush(stderr);
  }
  std::mutex mutex_;
  Clock::time_point start_ = Clock::now();
};

// One live line, redrawn several times a second: point k of N, what runs, elapsed and ETA.
// Finished points and warnings scroll above it.
class SmartTerminalStatus final : public Status {
 public:
  SmartTerminalStatus() : ticker_([this] { tick(); }) {}
  ~SmartTerminalStatus() override { finish(); }

  void phase(std::string_view what) override {
    std::lock_guard lock(mutex_);
    current_ = std::string(what);
    redraw();
  }
  void point_started(int index, int total, std::string_view id, int repetition,
                     int repetitions) override {
    std::lock_guard lock(mutex_);
    if (first_point_ == Clock::time_point()) {
      first_point_ = Clock::now();
    }
    index_ = index;
    total_ = total;
    current_ = repetitions > 1 ? fmt::format("{} (rep {}/{})", id, repetition, repetitions)
                               : std::string(id);
    redraw();
  }
  void point_finished(int index, int total, std::string_view id, bool passed,
                      std::string_view outcome) override {
    std::lock_guard lock(mutex_);
    done_ = index + 1;
    total_ = total;
    scroll(fmt::format("{} [{}/{}] {}: {}", passed ? "\x1b[32mok\x1b[0m  " : "\x1b[31mFAIL\x1b[0m",
                       index + 1, total, id, outcome));
  }
  void warning(std::string_view text) override {
    std::lock_guard lock(mutex_);
    scroll(fmt::format("\x1b[33mwarning\x1b[0m: {}", text));
  }
  void finish() override {
    {
      std::lock_guard lock(mutex_);
      if (stopped_) {
        return;
      }
      stopped_ = true;
      std::fputs("\r\x1b[K", stderr);
      std::fflush(stderr);
    }
    wake_.notify_all();
    ticker_.join();
  }

 private:
  void tick() {
    std::unique_lock lock(mutex_);
    while (!stopped_) {
      wake_.wait_for(lock, std::chrono::milliseconds(250));
      if (!stopped_) {
        redraw();
      }
    }
  }
  void scroll(const std::string& text) {
    std::fprintf(stderr, "\r\x1b[K%s\n", text.c_str());
    redraw();
  }
  void redraw() {
    if (stopped_) {
      return;
    }
    double elapsed = seconds_since(start_);
    std::string eta;
    if (done_ > 0 && total_ > done_) {
      double per_point = seconds_since(first_point_) / done_;
      eta = fmt::format("  ETA {:.0f}s", per_point * (total_ - done_));
    }
    std::string progress = total_ > 0 ? fmt::format("[{}/{}] ", index_ + 1, total_) : "";
    std::string text = fmt::format("{}{}  {:.1f}s{}", progress, current_, elapsed, eta);
    if (text.size() > 150) {
      text = text.substr(0, 147) + "...";
    }
    std::fprintf(stderr, "\r\x1b[K%s", text.c_str());
    std::fflush(stderr);
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  Clock::time_point start_ = Clock::now();
  Clock::time_point first_point_{};
  std::string current_ = "starting";
  int index_ = 0;
  int total_ = 0;
  int done_ = 0;
  bool stopped_ = false;
  std::thread ticker_;
};

class QuietStatus final : public Status {
 public:
  void phase(std::string_view) override {}
  void point_started(int, int, std::string_view, int, int) override {}
  void point_finished(int, int, std::string_view, bool, std::string_view) override {}
  void warning(std::string_view text) override {
    std::fprintf(stderr, "warning: %.*s\n", static_cast<int>(text.size()), text.data());
  }
  void finish() override {}
};

}  // namespace

std::unique_ptr<Status> make_status(bool quiet) {
  if (quiet) {
    return std::make_unique<QuietStatus>();
  }
  const char* term = std::getenv("TERM");
  bool smart = ::isatty(1) && ::isatty(2) && term != nullptr && std::string_view(term) != "dumb";
  if (smart) {
    return std::make_unique<SmartTerminalStatus>();
  }
  return std::make_unique<PlainStatus>();
}

}  // namespace ernic
