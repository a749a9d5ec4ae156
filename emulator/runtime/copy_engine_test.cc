#include "runtime/copy_engine.h"

#include <sched.h>

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>
#include <vector>

namespace ernic::emu {
namespace {

using namespace std::chrono_literals;

struct Reports {
  std::vector<std::pair<CopyEngine::Token, bool>> done;
};

// Runs `loop` until `reports` holds `count` entries or `timeout` passed.
void run_until(EventLoop& loop, const Reports& reports, std::size_t count,
               std::chrono::milliseconds timeout = 10s) {
  loop.run_until([&] { return reports.done.size() >= count; }, EventLoop::Clock::now() + timeout);
}

std::vector<std::byte> pattern(std::size_t n, int seed) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    v[i] = static_cast<std::byte>((i * 131 + static_cast<std::size_t>(seed)) & 0xff);
  }
  return v;
}

// The scheduling policy of this process's thread called `name` (field 41 of its stat), or -1.
int policy_of_thread(const std::string& name) {
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string thread_name;
    std::getline(comm, thread_name);
    if (thread_name != name) {
      continue;
    }
    std::ifstream stat(task.path() / "stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    std::istringstream fields(text.substr(text.rfind(')') + 2));  // field 3 on
    std::string field;
    for (int i = 3; i <= 41 && fields >> field; ++i) {
    }
    return std::stoi(field);
  }
  return -1;
}

TEST_CASE("the copy engine copies on a thread at idle priority and reports on the loop") {
  EventLoop loop;
  Reports reports;
  // No rescue within the test's time: on a loaded CI machine the idle-priority thread can
  // wait longer than the default before it runs, and then the loop finishes the copy itself
  // (the case the rescue test covers), which is not what this one asserts.
  CopyEngine engine(
      loop, [&](CopyEngine::Token t, bool rescued) { reports.done.emplace_back(t, rescued); },
      std::chrono::minutes(10));
  const auto source = pattern(3u << 20, 1);
  std::vector<std::byte> plain(source.size());
  std::vector<std::byte> streamed(source.size());
  const auto a = engine.submit(plain.data(), source.data(), source.size(), false);
  const auto b = engine.submit(streamed.data() + 0, source.data(), source.size(), true);
  CHECK(a != b);
  run_until(loop, reports, 2);
  REQUIRE(reports.done.size() == 2);
  CHECK(reports.done[0] == std::pair{a, false});  // in order of submission
  CHECK(reports.done[1] == std::pair{b, false});
  CHECK(plain == source);
  CHECK(streamed == source);
  CHECK(engine.pending() == 0);
  CHECK(engine.stats().copies == 2);
  CHECK(engine.stats().idle_priority);
  CHECK(policy_of_thread("ernic-copy") == SCHED_IDLE);
}

TEST_CASE("a cancelled copy is not written on and not reported; finish_here completes it") {
  EventLoop loop;
  Reports reports;
  CopyEngine engine(
      loop, [&](CopyEngine::Token t, bool rescued) { reports.done.emplace_back(t, rescued); });
  // The first copy keeps the thread busy while the others wait behind it.
  const auto big = pattern(64u << 20, 2);
  std::vector<std::byte> big_target(big.size());
  const auto small = pattern(1u << 20, 3);
  std::vector<std::byte> cancelled(small.size(), std::byte{0x77});
  std::vector<std::byte> finished(small.size());
  const auto first = engine.submit(big_target.data(), big.data(), big.size(), false);
  const auto second = engine.submit(cancelled.data(), small.data(), small.size(), false);
  const auto third = engine.submit(finished.data(), small.data(), small.size(), false);
  engine.cancel(second);
  engine.finish_here(third);
  CHECK(finished == small);  // complete as soon as finish_here returns
  engine.cancel(first);
  // From here on the engine must not write into the first target any more.
  std::fill(big_target.begin(), big_target.end(), std::byte{0x55});
  CHECK(engine.pending() == 0);
  run_until(loop, reports, 1, 100ms);
  CHECK(reports.done.empty());
  CHECK(std::all_of(cancelled.begin(), cancelled.end(),
                    [](std::byte v) { return v == std::byte{0x77}; }));
  CHECK(std::all_of(big_target.begin(), big_target.end(),
                    [](std::byte v) { return v == std::byte{0x55}; }));
  // The engine goes on with new work afterwards.
  std::vector<std::byte> after(small.size());
  const auto fourth = engine.submit(after.data(), small.data(), small.size(), false);
  run_until(loop, reports, 1);
  REQUIRE(reports.done.size() == 1);
  CHECK(reports.done[0].first == fourth);
  CHECK(after == small);
}

// A copy the thread has not finished in time (a long one: 128 MiB take more than 10 ms) is
// finished by the loop, reported as rescued, and never reported twice; what waited behind it
// is still copied.
TEST_CASE("a copy the thread is late with is finished by the loop") {
  EventLoop loop;
  Reports reports;
  CopyEngine engine(
      loop, [&](CopyEngine::Token t, bool rescued) { reports.done.emplace_back(t, rescued); }, 1ms);
  const auto big = pattern(128u << 20, 4);
  std::vector<std::byte> big_target(big.size());
  const auto small = pattern(1u << 20, 5);
  std::vector<std::byte> behind(small.size());
  const auto first = engine.submit(big_target.data(), big.data(), big.size(), false);
  const auto second = engine.submit(behind.data(), small.data(), small.size(), false);
  run_until(loop, reports, 2);
  REQUIRE(reports.done.size() == 2);
  const auto report_of = [&](CopyEngine::Token t) {
    return std::find_if(reports.done.begin(), reports.done.end(),
                        [t](const auto& r) { return r.first == t; });
  };
  REQUIRE(report_of(first) != reports.done.end());
  REQUIRE(report_of(second) != reports.done.end());
  CHECK(report_of(first)->second);  // rescued
  CHECK(big_target == big);
  CHECK(behind == small);
  CHECK(engine.stats().rescued >= 1);
  CHECK(engine.stats().bytes_rescued > 0);
  run_until(loop, reports, 3, 50ms);
  CHECK(reports.done.size() == 2);
}

}  // namespace
}  // namespace ernic::emu
