#include "runtime/traffic_scheduling.h"

#include <catch2/catch.hpp>

#include <string>
#include <thread>
#include <vector>

#include "runtime/scheduling.h"

namespace ernic::emu {
namespace {

using std::chrono::milliseconds;
using Clock = TrafficScheduling::Clock;

// A loop's scheduling with a hand-driven request counter and a record of what it applied.
struct Driven {
  std::uint64_t requests = 0;
  std::vector<std::string> applied;
  Clock::time_point start{};
  TrafficScheduling scheduling{
      [this] { return requests; },
      {[this] { applied.emplace_back("latency"); }, [this] { applied.emplace_back("bulk"); }},
      start,
      milliseconds(50)};
  void at(milliseconds t) { scheduling.observe(start + t); }
};

TEST_CASE("a loop leaves the short slice after a quiet spell and takes it at the next request") {
  Driven d;
  CHECK(d.scheduling.mode() == TrafficScheduling::Mode::kLatency);
  CHECK(d.applied == std::vector<std::string>{"latency"});  // from the start
  d.at(milliseconds(49));
  CHECK(d.scheduling.mode() == TrafficScheduling::Mode::kLatency);
  d.at(milliseconds(50));
  CHECK(d.scheduling.mode() == TrafficScheduling::Mode::kBulk);
  d.at(milliseconds(80));
  d.at(milliseconds(500));
  CHECK(d.applied == std::vector<std::string>{"latency", "bulk"});  // applied once, not per turn
  ++d.requests;
  d.at(milliseconds(501));
  CHECK(d.scheduling.mode() == TrafficScheduling::Mode::kLatency);
  CHECK(d.scheduling.latency_periods() == 2);
  CHECK(d.applied.back() == "latency");
}

TEST_CASE("requests keep a loop on the short slice however long they go on") {
  Driven d;
  for (int t = 10; t <= 1000; t += 10) {
    ++d.requests;  // one every 10 ms: never a quiet spell of 50
    d.at(milliseconds(t));
  }
  CHECK(d.scheduling.mode() == TrafficScheduling::Mode::kLatency);
  CHECK(d.applied.size() == 1);
  d.at(milliseconds(1049));  // quiet is counted from the last request, not from the start
  CHECK(d.scheduling.mode() == TrafficScheduling::Mode::kLatency);
  d.at(milliseconds(1050));
  CHECK(d.scheduling.mode() == TrafficScheduling::Mode::kBulk);
}

TEST_CASE("a loop's modes are a short slice and the batch policy of its own thread") {
  std::thread([] {
    const auto kernel_slice = time_slice();
    std::uint64_t requests = 0;
    const auto t0 = Clock::now();
    TrafficScheduling scheduling([&requests] { return requests; },
                                 TrafficScheduling::for_calling_thread(), t0, milliseconds(50));
    CHECK(std::string(scheduling_policy_name()) == "normal");
    CHECK(time_slice() == (time_slices_granted() ? kLatencySlice : kernel_slice));
    scheduling.observe(t0 + milliseconds(50));
    CHECK(std::string(scheduling_policy_name()) == "batch");
    CHECK(time_slice() == kernel_slice);
    ++requests;
    scheduling.observe(t0 + milliseconds(51));
    CHECK(std::string(scheduling_policy_name()) == "normal");
    CHECK(time_slice() == (time_slices_granted() ? kLatencySlice : kernel_slice));
  }).join();
}

}  // namespace
}  // namespace ernic::emu
