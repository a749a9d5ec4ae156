// `ernicctl perf relay_floor`: the four-process relay that bounds send_lat from below.
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "process_tree.h"
#include "test_dir.h"
#include "test_process.h"

namespace ernic::emu {
namespace {

bool alive(pid_t pid) {
  return kill(pid, 0) == 0;
}

TEST_CASE(
    "relay_floor relays every round spinning (over the socket and through shared memory) and "
    "blocking, and prints each one-way time") {
  TestDir dir("relay-floor");
  const auto output = dir.path() / "out.txt";
  const pid_t pid = spawn_ernicctl({"perf", "relay_floor", "-s", "4096", "-n", "300"}, output);
  REQUIRE(wait_exit(pid, std::chrono::seconds(120)) == 0);
  const std::string text = read_all(output);
  INFO(text);
  const std::regex line(
      R"( relay floor, (spinning|spinning over shared memory|blocking), 4096 B, four processes : one way median ([0-9.]+) )"
      R"(usec, p99 ([0-9.]+) usec, min ([0-9.]+) usec \(([0-9]+) samples\), )"
      R"(([0-9.]+) context switches a round trip)");
  std::set<std::string> modes;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), line); it != std::sregex_iterator();
       ++it) {
    const auto& m = *it;
    modes.insert(m[1]);
    const double median = std::stod(m[2]), p99 = std::stod(m[3]), min = std::stod(m[4]);
    CHECK(min > 0);
    CHECK(min <= median);
    CHECK(median <= p99);
    CHECK(m[5] == "300");  // the warm-up rounds are not samples
    if (m[1] == "blocking") {
      // Each of the four blocks at least once a round trip (the peer client waits for every
      // message); with the count per round trip wrong by a factor of the iterations, it is not
      // within this.
      const double switches = std::stod(m[6]);
      CHECK(switches >= 4);
      CHECK(switches <= 40);
    }
  }
  CHECK(modes == std::set<std::string>{"spinning", "spinning over shared memory", "blocking"});
}

TEST_CASE("relay_floor with a participant killed fails naming it and leaves none running") {
  TestDir dir("relay-floor-kill");
  const auto output = dir.path() / "out.txt";
  // Long enough that the relay is still running when a participant is killed.
  const pid_t pid = spawn_ernicctl({"perf", "relay_floor", "-n", "1000000"}, output);
  std::vector<pid_t> participants;
  REQUIRE(observe([&] { return (participants = testing::children_of(pid)).size() == 3; },
                  std::chrono::seconds(30)));
  kill(participants.front(), SIGKILL);
  const int status = wait_exit(pid, std::chrono::seconds(20));
  INFO(read_all(output));
  CHECK(status == 1);
  CHECK(read_all(output).find("relay_floor: a relay participant was killed by signal 9") !=
        std::string::npos);
  for (pid_t participant : participants) {
    CHECK_FALSE(alive(participant));
  }
}

TEST_CASE("relay_floor refuses a size or a count it cannot run") {
  TestDir dir("relay-floor-bad");
  const auto output = dir.path() / "out.txt";
  CHECK(wait_exit(spawn_ernicctl({"perf", "relay_floor", "-s", "0"}, output),
                  std::chrono::seconds(10)) == 2);
  CHECK(wait_exit(spawn_ernicctl({"perf", "relay_floor", "-n", "2000000"}, output),
                  std::chrono::seconds(10)) == 2);
  const std::string text = read_all(output);
  CHECK(text.find("-s must be a size between 1 byte and 64 MiB") != std::string::npos);
  CHECK(text.find("-n must be at most 1000000 for relay_floor") != std::string::npos);
}

}  // namespace
}  // namespace ernic::emu
