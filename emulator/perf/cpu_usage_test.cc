// What `ernicctl perf` reports beside every figure about the processes that made it.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <future>
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

TEST_CASE("process_cpu_seconds sees another process's burst shorter than a clock tick") {
  int go[2];
  int done[2];
  REQUIRE(pipe(go) == 0);
  REQUIRE(pipe(done) == 0);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    char byte = 0;
    if (read(go[0], &byte, 1) != 1) {
      _exit(1);
    }
    burn(std::chrono::milliseconds(3));
    [[maybe_unused]] auto written = write(done[1], &byte, 1);
    [[maybe_unused]] auto read_back = read(go[0], &byte, 1);  // alive until measured
    _exit(0);
  }
  const double before = process_cpu_seconds(child);
  char byte = 0;
  REQUIRE(write(go[1], &byte, 1) == 1);
  REQUIRE(read(done[0], &byte, 1) == 1);
  const double used = process_cpu_seconds(child) - before;
  REQUIRE(write(go[1], &byte, 1) == 1);
  REQUIRE(waitpid(child, nullptr, 0) == child);
  for (int fd : {go[0], go[1], done[0], done[1]}) {
    close(fd);
  }
  REQUIRE(before >= 0);
  // Counted in clock ticks (10 ms) it would be 0 or 0.01.
  CHECK(used >= 0.003);
  CHECK(used < 0.009);
  CHECK(process_cpu_seconds(child) < 0);  // reaped: gone
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

TEST_CASE("process_context_switches has no count for a process that is gone") {
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    _exit(0);
  }
  REQUIRE(waitpid(child, nullptr, 0) == child);
  CHECK_FALSE(process_context_switches(child).has_value());
}

TEST_CASE("CpuMeter counts the switches its instance made while it measured") {
  int done[2];
  int release[2];
  REQUIRE(pipe(done) == 0);
  REQUIRE(pipe(release) == 0);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    char byte = 0;
    if (read(release[0], &byte, 1) != 1) {  // the meter starts first
      _exit(1);
    }
    sleep_briefly(kSleeps);
    [[maybe_unused]] auto written = write(done[1], &byte, 1);
    [[maybe_unused]] auto read_back = read(release[0], &byte, 1);  // alive until measured
    _exit(0);
  }
  CpuMeter meter(child);
  char byte = 0;
  REQUIRE(write(release[1], &byte, 1) == 1);
  REQUIRE(read(done[0], &byte, 1) == 1);
  const CpuUse use = meter.stop();
  REQUIRE(write(release[1], &byte, 1) == 1);
  REQUIRE(waitpid(child, nullptr, 0) == child);
  for (int fd : {done[0], done[1], release[0], release[1]}) {
    close(fd);
  }
  REQUIRE(use.instance_switches);
  CHECK(*use.instance_switches >= kSleeps);
  REQUIRE(use.load_generator_switches);  // this process blocked reading `done`
  CHECK(*use.load_generator_switches >= 1);
}

}  // namespace
}  // namespace ernic::emu::perf
