// What `ernicctl perf` reports beside every figure about the processes that made it.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <optional>
#include <stdexcept>
#include <thread>

#include "perf/cpu_usage.h"

namespace ernic::emu::perf {
namespace {

constexpr int kSleeps = 100;

void sleep_briefly(int times) {
  for (int i = 0; i < times; ++i) {
    usleep(100);  // each sleep is one voluntary switch
  }
}

// Busy until this process has used `cpu` more CPU time than when it started.
void burn(std::chrono::microseconds cpu) {
  const double until = process_cpu_seconds(getpid()) + std::chrono::duration<double>(cpu).count();
  while (process_cpu_seconds(getpid()) < until) {
  }
}

// A child process that does `work` when told to and then stays alive until it is reaped, so
// that what the work cost can still be read from the kernel.
class ChildAtWork {
 public:
  explicit ChildAtWork(const std::function<void()>& work) {
    if (pipe(go_) != 0 || pipe(done_) != 0) {
      throw std::runtime_error("pipe");
    }
    pid_ = fork();
    if (pid_ < 0) {
      throw std::runtime_error("fork");
    }
    if (pid_ == 0) {
      char byte = 0;
      if (read(go_[0], &byte, 1) != 1) {
        _exit(1);
      }
      work();
      [[maybe_unused]] auto written = write(done_[1], &byte, 1);
      [[maybe_unused]] auto released = read(go_[0], &byte, 1);
      _exit(0);
    }
  }
  ChildAtWork(const ChildAtWork&) = delete;
  ChildAtWork& operator=(const ChildAtWork&) = delete;
  ~ChildAtWork() {
    reap();
    for (int fd : {go_[0], go_[1], done_[0], done_[1]}) {
      close(fd);
    }
  }

  pid_t pid() const { return pid_; }
  // Lets the work start and returns once it is done.
  bool work() {
    char byte = 0;
    return write(go_[1], &byte, 1) == 1 && read(done_[0], &byte, 1) == 1;
  }
  void reap() {
    if (pid_ > 0) {
      char byte = 0;
      [[maybe_unused]] auto released = write(go_[1], &byte, 1);
      waitpid(pid_, nullptr, 0);
      pid_ = -pid_;  // remembered, for asking about a process that is gone
    }
  }

 private:
  int go_[2] = {-1, -1};
  int done_[2] = {-1, -1};
  pid_t pid_ = -1;
};

TEST_CASE("process_cpu_seconds sees another process's burst shorter than a clock tick") {
  ChildAtWork child([] { burn(std::chrono::milliseconds(3)); });
  const double before = process_cpu_seconds(child.pid());
  REQUIRE(child.work());
  const double used = process_cpu_seconds(child.pid()) - before;
  const pid_t pid = child.pid();
  child.reap();
  REQUIRE(before >= 0);
  // Counted in clock ticks (10 ms) it would be 0 or 0.01.
  CHECK(used >= 0.003);
  CHECK(used < 0.009);
  CHECK(process_cpu_seconds(pid) < 0);  // reaped: gone
  CHECK_FALSE(process_context_switches(pid).has_value());
}

TEST_CASE("process_context_switches counts the switches of every thread, not the first one's") {
  const auto before = process_context_switches(getpid());
  REQUIRE(before);
  std::promise<void> slept;
  std::promise<void> counted;
  std::thread sleeper([&] {
    sleep_briefly(kSleeps);
    slept.set_value();
    counted.get_future().wait();  // a thread that ended would take its counters with it
  });
  slept.get_future().wait();
  const auto during = process_context_switches(getpid());
  counted.set_value();
  sleeper.join();
  REQUIRE(during);
  CHECK(*during >= *before + kSleeps);
}

TEST_CASE("CpuMeter counts the switches its instance made while it measured") {
  ChildAtWork child([] { sleep_briefly(kSleeps); });
  const CpuMeter meter(child.pid());
  REQUIRE(child.work());
  const CpuUse use = meter.stop();
  REQUIRE(use.instance_switches);
  CHECK(*use.instance_switches >= kSleeps);
  REQUIRE(use.load_generator_switches);  // this process blocked waiting for the child
  CHECK(*use.load_generator_switches >= 1);
}

TEST_CASE("switches_between gives no count when a reading is missing or went backwards") {
  CHECK(switches_between(10, 25) == std::optional<std::uint64_t>(15));
  CHECK(switches_between(10, 10) == std::optional<std::uint64_t>(0));
  // A count that fell means the set of processes changed between the readings (one ended).
  CHECK_FALSE(switches_between(25, 10));
  CHECK_FALSE(switches_between(std::nullopt, 10));
  CHECK_FALSE(switches_between(10, std::nullopt));
}

}  // namespace
}  // namespace ernic::emu::perf
