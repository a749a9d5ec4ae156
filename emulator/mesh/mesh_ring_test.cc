// The stream of a local connection through a ring in shared memory (mesh_rings.cc), as the
// instances' processes use it.
#include <signal.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <vector>

#include "frontend/shm_client.h"
#include "mesh/mesh_test_support.h"
#include "supervisor.h"
#include "test_dir.h"
#include "test_process.h"

namespace ernic::emu {
namespace {

// The worker's system calls reading its mesh connections for 200 small frames, one at a time.
std::uint64_t reads_for_small_frames(const std::vector<std::string>& extra_args) {
  TestDir dir("mesh-reads");
  std::vector<std::string> args = {"--stats-interval-ms", "20"};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  Supervisor supervisor;
  supervisor.start(mesh_config_with(dir.path(), 2, args));
  ShmClient manager(supervisor.instances()[0].socket.string());
  ShmClient worker(supervisor.instances()[1].socket.string());
  EndpointPair pair(manager, worker);
  const auto& stats = supervisor.instances()[1].stats;
  // The worker's count once its stats file was written after `since`.
  const auto reads_after = [&](std::filesystem::file_time_type since) {
    REQUIRE(observe([&] { return std::filesystem::last_write_time(stats) > since; },
                    std::chrono::seconds(5)));
    return stat_of(stats, "mesh_read_calls");
  };
  pair.a.client.post_send(pair.a.qpn, pair.a.wr(SendOpcode::kRdmaWrite, 0, 0, 8, pair.b, 0));
  REQUIRE(pair.a.next().ok());
  const std::uint64_t before = reads_after(std::filesystem::file_time_type::clock::now());
  constexpr std::uint64_t kWrites = 200;  // one at a time: each its own frame, read on its own
  for (std::uint64_t i = 1; i <= kWrites; ++i) {
    pair.a.client.post_send(pair.a.qpn, pair.a.wr(SendOpcode::kRdmaWrite, i, 0, 8, pair.b, 0));
    REQUIRE(pair.a.next().ok());
  }
  const std::uint64_t reads = reads_after(std::filesystem::file_time_type::clock::now()) - before;
  CHECK(supervisor.check_alive().empty());
  return reads;
}

// A read that comes back short found the socket empty: the turn ends there instead of a third
// read that would only say EAGAIN (a system call costs a microsecond in a VM, a good part of a
// small frame's trip). A small frame then costs its receiver two reads: the header, then the
// payload with room for the next header.
TEST_CASE("a small frame costs its receiver two reads, not a third that finds nothing") {
  const std::uint64_t reads = reads_for_small_frames({"--mesh-socket-streams"});
  CHECK(reads >= 200);
  CHECK(reads <= 2 * 200 + 20);  // the slack: heartbeats; three a frame were 600
}

// Between co-located instances the stream goes through a ring in shared memory once the
// connection is up: the frames are read from memory, the socket only for heartbeats on the
// primary connection (TCP, the registration's).
TEST_CASE("over a ring a small frame costs its receiver no read system call") {
  CHECK(reads_for_small_frames({}) <= 20);
}

// A node that reads no rings (--mesh-socket-streams, or one that predates them) says so in its
// handshake: neither side then streams through one, and everything, payloads by reference with
// their memfds included, goes over the local socket as before.
TEST_CASE("a peer that reads no rings gets its stream on the socket, and sends it there") {
  TestDir dir("mesh-no-rings");
  Supervisor supervisor;
  supervisor.start(mesh_config(dir.path(), 1));
  const auto& manager = supervisor.instances()[0];
  const pid_t worker = worker_after_exchange(dir.path(), manager, {"--mesh-socket-streams"}, 43);
  const auto stats = dir.path() / "w.stats";
  CHECK(stat_of(manager.stats, "mesh_ring_streams") == 0);
  CHECK(stat_of(stats, "mesh_ring_streams") == 0);
  CHECK(stat_of(manager.stats, "mesh_bytes_by_reference") >= 300000);
  CHECK(supervisor.check_alive().empty());
  kill(worker, SIGTERM);
  CHECK(wait_exit(worker, std::chrono::seconds(10)) == 0);
}

}  // namespace
}  // namespace ernic::emu
