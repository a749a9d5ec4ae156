// The load generator's buffer layout (how many message-sized slots each QP registers) and the
// data path it serves, on real instances in this process.
#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "frontend/shm_client.h"
#include "perf/endpoint.h"
#include "supervisor.h"
#include "test_dir.h"
#include "test_process.h"

namespace ernic::emu::perf {
namespace {

constexpr std::uint64_t kMiB = 1u << 20;

PerfOptions options(Verb verb, Mode mode, bool verify) {
  PerfOptions o;
  o.verb = verb;
  o.mode = mode;
  o.verify = verify;
  o.iterations = 1000;
  o.tx_depth = 128;
  return o;
}

TEST_CASE("bandwidth without --verify registers one message-sized slot per QP, as perftest") {
  for (const Verb verb : {Verb::kSend, Verb::kWrite, Verb::kRead}) {
    INFO(test_title(verb, Mode::kBandwidth));
    for (const std::uint64_t size : {std::uint64_t{4096}, kMiB, 8 * kMiB}) {
      INFO(size);
      const BufferLayout l = buffer_layout(options(verb, Mode::kBandwidth, false), size);
      CHECK(l.slots == 1);
      CHECK(l.slot_size == size);
      CHECK(l.bytes_per_qp() == size);
      CHECK(l.send_depth == 128);  // the whole window shares the slot
      // Only SEND consumes receives; they all point at the one slot.
      CHECK(l.receive_depth == (verb == Verb::kSend ? 1000u : 0u));
    }
  }
}

TEST_CASE("bandwidth with --verify gives every message in flight a slot of its own") {
  SECTION("8 MiB: the 64 MiB budget bounds the slots and the window with them") {
    const BufferLayout l = buffer_layout(options(Verb::kWrite, Mode::kBandwidth, true), 8 * kMiB);
    CHECK(l.slots == 8);
    CHECK(l.bytes_per_qp() == 64 * kMiB);
    CHECK(l.send_depth == 8);
    CHECK(l.receive_depth == 8);  // WRITE with immediate: one receive per slot
  }
  SECTION("4 KiB: a slot for each message of the send queue") {
    const BufferLayout l = buffer_layout(options(Verb::kSend, Mode::kBandwidth, true), 4096);
    CHECK(l.slots == 128);
    CHECK(l.send_depth == 128);
    CHECK(l.receive_depth == 128);
  }
  SECTION("a message larger than half the budget still gets two slots") {
    const BufferLayout l = buffer_layout(options(Verb::kRead, Mode::kBandwidth, true), 40 * kMiB);
    CHECK(l.slots == 2);
    CHECK(l.send_depth == 2);
    CHECK(l.receive_depth == 0);
  }
}

TEST_CASE("latency tests keep a sending and a receiving slot") {
  for (const bool verify : {false, true}) {
    const BufferLayout l = buffer_layout(options(Verb::kWrite, Mode::kLatency, verify), 65536);
    CHECK(l.slots == 2);
    CHECK(l.bytes_per_qp() == 2 * 65536);
  }
}

// Two sides on two instances, connected the way the out-of-band exchange connects them.
struct Pair {
  Pair(ShmClient& server_device, ShmClient& client_device, const PerfOptions& server_options,
       const PerfOptions& client_options, std::uint64_t size)
      : server(server_device, server_options, size), client(client_device, client_options, size) {}
  void connect() {
    client.connect(server.describe());
    server.connect(client.describe());
  }
  Endpoint server;
  Endpoint client;
};

class Instances {
 public:
  Instances() : dir_("perf-endpoint") {
    start_instances(supervisor_, dir_.path(), 2, "endpoint-test");
    manager_.emplace(supervisor_.instances()[0].socket.string());
    worker_.emplace(supervisor_.instances()[1].socket.string());
  }
  ShmClient& manager() { return *manager_; }
  ShmClient& worker() { return *worker_; }

 private:
  TestDir dir_;
  Supervisor supervisor_;
  std::optional<ShmClient> manager_, worker_;
};

// Sends message `seq` and returns the server's completion for it.
ShmClient::Completion deliver(Pair& p, const PerfOptions& o, std::uint64_t seq,
                              std::uint64_t size) {
  post_message(p.client, o, 0, seq, size);
  p.client.next(10, "client");
  return *p.server.next(10, "server");
}

TEST_CASE("a verified bandwidth run still checks every message's data") {
  Instances instances;
  constexpr std::uint64_t size = 256 * 1024;
  for (const Verb verb : {Verb::kSend, Verb::kWrite}) {
    INFO(test_title(verb, Mode::kBandwidth));
    const PerfOptions o = options(verb, Mode::kBandwidth, true);
    Pair p(instances.manager(), instances.worker(), o, o, size);
    p.connect();
    REQUIRE(p.server.layout.slots > 2);
    std::vector<std::uint64_t> next_recv{0};
    for (; next_recv[0] < p.server.layout.receive_depth; ++next_recv[0]) {
      p.server.post_recv_slot(0, wr_id(0, next_recv[0]), next_recv[0]);
    }
    // Message 0 arrives intact and passes; message 1 lands in a slot of its own.
    take_receive(p.server, o, size, deliver(p, o, 0, size), next_recv);
    const ShmClient::Completion second = deliver(p, o, 1, size);
    CHECK(p.server.slot(0, 1) != p.server.slot(0, 0));
    p.server.slot(0, 1)[size / 2] ^= std::byte{0x5a};  // as if a later message overwrote it
    CHECK_THROWS_WITH(take_receive(p.server, o, size, second, next_recv),
                      Catch::Contains("Data verification failed") &&
                          Catch::Contains("message 1 on QP 0") &&
                          Catch::Contains(std::to_string(size / 2)));
  }
}

TEST_CASE("without --verify every WRITE of a QP lands in the peer's one slot") {
  Instances instances;
  constexpr std::uint64_t size = 1 * kMiB;
  const PerfOptions o = options(Verb::kWrite, Mode::kBandwidth, false);
  Pair p(instances.manager(), instances.worker(), o, o, size);
  p.connect();
  REQUIRE(p.client.layout.slots == 1);
  for (std::uint64_t seq = 0; seq < 3; ++seq) {
    CHECK(p.client.remote_slot(0, seq) == p.client.remote[0].vaddr);
    fill(p.client.slot(0, seq), size, seq, 0);  // what the message carries
    post_message(p.client, o, 0, seq, size);
    // A WRITE outside the peer's region would complete with a remote access error here.
    p.client.next(10, "client");
    check(p.server.slot(0, 0), size, seq, 0, "RDMA WRITE data");
  }
}

// As perftest's write_lat, a side waits for its own WRITE's completion before the peer's WRITE:
// the wait for the marker gets its own spin window (as send_lat's does), and a WRITE that fails
// is reported at once with its cause rather than as the peer's silence after the timeout.
TEST_CASE("write_lat waits for its own WRITE to complete before the peer's") {
  Instances instances;
  PerfOptions o = options(Verb::kWrite, Mode::kLatency, false);
  o.timeout_seconds = 5;
  Pair p(instances.manager(), instances.worker(), o, o, 4096);
  p.connect();
  p.client.remote[0].rkey ^= 0x5a5a;  // a key the peer never issued
  PingPong ping(p.client, o, 4096, true);
  CHECK_THROWS_WITH(ping.exchange(0), Catch::Contains("Completion with error at client") &&
                                          Catch::Contains("remote access"));
}

TEST_CASE("sides that cut their buffers differently refuse to connect") {
  Instances instances;
  const PerfOptions plain = options(Verb::kWrite, Mode::kBandwidth, false);
  const PerfOptions verified = options(Verb::kWrite, Mode::kBandwidth, true);
  Pair p(instances.manager(), instances.worker(), verified, plain, 1 * kMiB);
  CHECK_THROWS_WITH(p.connect(), Catch::Contains("the peer cuts its buffers into 64 slots of "
                                                 "1048576 bytes, this side into 1 of 1048576"));
}

}  // namespace
}  // namespace ernic::emu::perf
