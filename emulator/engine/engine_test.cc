#include "engine/engine.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "engine/local_fabric.h"

namespace ernic::emu {
namespace {

// Two engines (nodes 0 and 1) on a local hub with a manual clock, one connected QP each.
struct Pair {
  struct Side {
    std::unique_ptr<Engine> engine;
    Engine::Handle pd = 0;
    Engine::Handle cq = 0;
    std::uint32_t qpn = 0;
    std::vector<std::byte> memory;
    MemoryKeys keys;
    std::uint64_t iova = 0;
  };

  explicit Pair(std::uint32_t max_segment = 1u << 20, std::uint8_t rnr_retry = 7,
                std::uint32_t access = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead) {
    for (NodeId node : {0u, 1u}) {
      Side& s = sides[node];
      auto& port = hub.add_node(node, {node == 0 ? "gid-a" : "gid-b"});
      s.engine = std::make_unique<Engine>(port, EngineConfig{max_segment}, [this] { return now; });
      hub.attach(node, *s.engine);
      s.pd = s.engine->alloc_pd();
      s.cq = s.engine->create_cq();
      s.memory.assign(1 << 16, std::byte{0});
      s.iova = 0x10000000ull * (node + 1);
      s.keys = s.engine->reg_mr(s.pd, s.memory.data(), s.iova, s.memory.size(), access);
      s.qpn = s.engine->create_qp(s.pd, s.cq, s.cq);
    }
    for (NodeId node : {0u, 1u}) {
      Side& s = sides[node];
      QpAttributes a;
      a.state = QpState::kInit;
      a.access = kAccessRemoteWrite | kAccessRemoteRead;
      s.engine->modify_qp(s.qpn, a);
      a.state = QpState::kRtr;
      a.remote_gid = node == 0 ? "gid-b" : "gid-a";
      a.remote_qpn = sides[1 - node].qpn;
      s.engine->modify_qp(s.qpn, a);
      a.state = QpState::kRts;
      a.rnr_retry = rnr_retry;
      a.rnr_delay = std::chrono::microseconds(100);
      s.engine->modify_qp(s.qpn, a);
    }
  }

  std::vector<Completion> poll(int node) {
    std::vector<Completion> out(256);
    out.resize(sides[node].engine->poll_cq(sides[node].cq, out));
    return out;
  }
  void post_recv(int node, std::uint64_t wr_id, std::uint64_t offset, std::uint32_t length) {
    Side& s = sides[node];
    s.engine->post_recv(s.qpn, {wr_id, {s.iova + offset, length, s.keys.lkey}});
  }
  void post(int node, SendOpcode op, std::uint64_t wr_id, std::uint64_t offset,
            std::uint32_t length, std::uint64_t remote_addr = 0, std::uint32_t rkey = 0,
            std::uint32_t imm = 0) {
    Side& s = sides[node];
    SendWr wr;
    wr.wr_id = wr_id;
    wr.opcode = op;
    wr.sge = {s.iova + offset, length, s.keys.lkey};
    wr.remote_addr = remote_addr;
    wr.rkey = rkey;
    wr.imm = imm;
    s.engine->post_send(s.qpn, wr);
  }
  void fill(int node, std::uint64_t offset, std::uint32_t length, std::uint8_t seed) {
    for (std::uint32_t i = 0; i < length; ++i) {
      sides[node].memory[offset + i] = static_cast<std::byte>(seed + i * 7);
    }
  }
  bool holds(int node, std::uint64_t offset, std::uint32_t length, std::uint8_t seed) {
    for (std::uint32_t i = 0; i < length; ++i) {
      if (sides[node].memory[offset + i] != static_cast<std::byte>(seed + i * 7)) {
        return false;
      }
    }
    return true;
  }

  LocalHub hub;
  Clock::time_point now{};
  Side sides[2];
};

TEST_CASE("SENDs arrive in order, byte for byte, and complete only after the ACK") {
  Pair p(4096);  // small segments: every message of more than 4 KiB is split
  const std::uint32_t sizes[] = {1, 4096, 4097, 9000, 0, 10000};  // 10000 fills its buffer
  for (std::uint64_t i = 0; i < 6; ++i) {
    p.post_recv(1, 100 + i, i * 10000, 10000);
    p.fill(0, i * 10000, sizes[i], static_cast<std::uint8_t>(i + 1));
    p.post(0, SendOpcode::kSend, i, i * 10000, sizes[i]);
  }
  CHECK(p.poll(0).empty());  // nothing is acknowledged before the responder saw it

  p.hub.deliver();
  auto sent = p.poll(0);
  auto received = p.poll(1);
  REQUIRE(sent.size() == 6);
  REQUIRE(received.size() == 6);
  for (std::uint64_t i = 0; i < 6; ++i) {
    CHECK(sent[i].wr_id == i);
    CHECK(sent[i].status == WcStatus::kSuccess);
    CHECK(received[i].wr_id == 100 + i);
    CHECK(received[i].opcode == WcOpcode::kRecv);
    CHECK(received[i].byte_len == sizes[i]);
    CHECK(p.holds(1, i * 10000, sizes[i], static_cast<std::uint8_t>(i + 1)));
  }
}

TEST_CASE("SEND and WRITE with immediate deliver the immediate value") {
  Pair p;
  p.post_recv(1, 7, 0, 100);
  p.post_recv(1, 8, 0, 0);
  p.fill(0, 0, 64, 3);
  p.post(0, SendOpcode::kSendWithImm, 1, 0, 64, 0, 0, 0xabcd);
  p.post(0, SendOpcode::kRdmaWriteWithImm, 2, 0, 64, p.sides[1].iova + 500, p.sides[1].keys.rkey,
         0x1234);
  p.hub.deliver();
  auto received = p.poll(1);
  REQUIRE(received.size() == 2);
  CHECK(received[0].has_imm);
  CHECK(received[0].imm == 0xabcd);
  CHECK(received[1].opcode == WcOpcode::kRecvRdmaWithImm);
  CHECK(received[1].imm == 0x1234);
  CHECK(received[1].byte_len == 64);
  CHECK(p.holds(1, 500, 64, 3));
}

TEST_CASE("RDMA WRITE and READ move data across segments") {
  Pair p(1000);
  p.fill(0, 0, 5000, 11);
  p.post(0, SendOpcode::kRdmaWrite, 1, 0, 5000, p.sides[1].iova + 100, p.sides[1].keys.rkey);
  p.fill(1, 20000, 3333, 42);
  p.post(0, SendOpcode::kRdmaRead, 2, 30000, 3333, p.sides[1].iova + 20000, p.sides[1].keys.rkey);
  p.hub.deliver();
  auto sent = p.poll(0);
  REQUIRE(sent.size() == 2);
  CHECK(sent[0].opcode == WcOpcode::kRdmaWrite);
  CHECK(sent[1].opcode == WcOpcode::kRdmaRead);
  CHECK(sent[1].status == WcStatus::kSuccess);
  CHECK(p.holds(1, 100, 5000, 11));
  CHECK(p.holds(0, 30000, 3333, 42));
  CHECK(p.poll(1).empty());  // one-sided: the responder sees nothing
  CHECK(p.sides[0].engine->stats().rdma_write_bytes == 5000);
  CHECK(p.sides[0].engine->stats().rdma_read_bytes == 3333);
}

// What an instance's scheduling follows (runtime/traffic_scheduling.h): a latency test has
// one request outstanding and small ones; a bandwidth test keeps a window of large ones.
TEST_CASE("latency traffic is counted: lone requests and short ones served, not a window") {
  Pair p;
  const auto latency_requests = [&p](int node) {
    return p.sides[node].engine->stats().latency_requests;
  };
  for (std::uint64_t i = 0; i < 3; ++i) {  // a window of three 20 KiB WRITEs
    p.post(0, SendOpcode::kRdmaWrite, i, 0, 20000, p.sides[1].iova, p.sides[1].keys.rkey);
  }
  p.hub.deliver();
  REQUIRE(p.poll(0).size() == 3);
  CHECK(latency_requests(0) == 1);  // only the first found nothing outstanding
  CHECK(latency_requests(1) == 0);  // longer than kShortRequestBytes
  p.post_recv(1, 10, 0, 4096);
  p.post(0, SendOpcode::kSend, 4, 0, 4096);
  p.hub.deliver();
  REQUIRE(p.poll(0).size() == 1);
  CHECK(latency_requests(0) == 2);
  CHECK(latency_requests(1) == 1);
  p.post(0, SendOpcode::kRdmaRead, 5, 0, kShortRequestBytes, p.sides[1].iova, p.sides[1].keys.rkey);
  p.hub.deliver();
  REQUIRE(p.poll(0).size() == 1);
  CHECK(latency_requests(0) == 3);
  CHECK(latency_requests(1) == 2);
}

// Where an instance's loop runs follows this count (ShmFrontEnd::place_loop): both ends of a
// long transfer count it, and nobody counts short ones, however many are outstanding.
TEST_CASE("stream traffic is counted: requests of 1 MiB or more, posted or served") {
  Pair p;
  const auto streamed = [&p](int node) { return p.sides[node].engine->stats().stream_requests; };
  for (std::uint64_t i = 0; i < 3; ++i) {  // a window of three 20 KiB WRITEs
    p.post(0, SendOpcode::kRdmaWrite, i, 0, 20000, p.sides[1].iova, p.sides[1].keys.rkey);
  }
  p.post_recv(1, 10, 0, 4096);
  p.post(0, SendOpcode::kSend, 4, 0, 4096);
  p.hub.deliver();
  REQUIRE(p.poll(0).size() == 4);
  CHECK(streamed(0) == 0);
  CHECK(streamed(1) == 0);

  std::vector<std::vector<std::byte>> memory(2, std::vector<std::byte>(kStreamRequestBytes));
  std::vector<MemoryKeys> keys;
  for (int node : {0, 1}) {
    Pair::Side& s = p.sides[node];
    keys.push_back(s.engine->reg_mr(s.pd, memory[node].data(), 0x70000000ull * (node + 1),
                                    kStreamRequestBytes, kAccessLocalWrite | kAccessRemoteWrite));
  }
  SendWr write;
  write.wr_id = 5;
  write.opcode = SendOpcode::kRdmaWrite;
  write.sge = {0x70000000ull, static_cast<std::uint32_t>(kStreamRequestBytes), keys[0].lkey};
  write.remote_addr = 0x70000000ull * 2;
  write.rkey = keys[1].rkey;
  p.sides[0].engine->post_send(p.sides[0].qpn, write);
  p.hub.deliver();
  const auto done = p.poll(0);
  REQUIRE(done.size() == 1);
  CHECK(done[0].status == WcStatus::kSuccess);
  CHECK(streamed(0) == 1);  // posted
  CHECK(streamed(1) == 1);  // served
}

// The fabric may ask for other segments towards a peer (the mesh: larger ones to a peer that
// takes payloads by reference); the engine's own size holds elsewhere, READ responses included.
TEST_CASE("segments follow the size the fabric prefers towards each peer") {
  Pair p(1000);
  p.hub.prefer_segments(0, 1, 4096);
  p.fill(0, 0, 10000, 3);
  p.post(0, SendOpcode::kRdmaWrite, 1, 0, 10000, p.sides[1].iova + 100, p.sides[1].keys.rkey);
  p.hub.deliver();
  CHECK(p.hub.data_frame_lengths() == std::vector<std::uint32_t>{4096, 4096, 1808});
  CHECK(p.holds(1, 100, 10000, 3));
  p.fill(1, 20000, 2500, 4);
  p.post(0, SendOpcode::kRdmaRead, 2, 30000, 2500, p.sides[1].iova + 20000, p.sides[1].keys.rkey);
  p.hub.deliver();
  // The READ response comes from side 1, which keeps its own 1000-byte segments.
  CHECK(p.hub.data_frame_lengths() ==
        std::vector<std::uint32_t>{4096, 4096, 1808, 1000, 1000, 500});
  CHECK(p.holds(0, 30000, 2500, 4));
  REQUIRE(p.poll(0).size() == 2);
}

// A one-segment WRITE of 100 bytes from side 0's QP to offset 64 of side 1's memory, as the
// mesh hands it to side 1's engine.
FrameHeader write_of_100_bytes(const Pair& p) {
  FrameHeader write;
  write.op = FrameOp::kWrite;
  write.flags = kFlagLast;
  write.dst_qpn = p.sides[1].qpn;
  write.src_qpn = p.sides[0].qpn;
  write.payload_length = 100;
  write.total_length = 100;
  write.rkey = p.sides[1].keys.rkey;
  write.remote_addr = p.sides[1].iova + 64;
  return write;
}

TEST_CASE("a frame whose payload is still arriving survives frames of other peers meanwhile") {
  // The mesh reads one connection per peer: node 0's WRITE segment is placed, its payload
  // arrives over several reads, and a frame of another node is placed and delivered in between.
  Pair p;
  Engine& responder = *p.sides[1].engine;
  const FrameHeader write = write_of_100_bytes(p);
  const Placement placement = responder.place(0, write);
  REQUIRE(placement.destination == p.sides[1].memory.data() + 64);
  FrameHeader other;  // an ACK from a node this QP is not connected to: refused
  other.op = FrameOp::kAck;
  other.dst_qpn = p.sides[1].qpn;
  other.src_qpn = 0x99;
  CHECK(responder.place(2, other).destination == nullptr);
  responder.delivered(2, other);
  CHECK(responder.stats().bytes_received == 0);
  responder.delivered(0, write);
  CHECK(responder.stats().bytes_received == 100);
  // A delivered() without its place() acts on nothing.
  responder.delivered(0, write);
  CHECK(responder.stats().bytes_received == 100);
}

TEST_CASE("a frame whose payload is still arriving survives frames of its node to other QPs") {
  // With lanes the mesh reads several connections per peer: node 0's WRITE segment for one QP
  // is placed, and a frame of node 0 for another QP is placed and delivered before the
  // segment's payload has all arrived.
  Pair p;
  Engine& responder = *p.sides[1].engine;
  const FrameHeader write = write_of_100_bytes(p);
  REQUIRE(responder.place(0, write).destination == p.sides[1].memory.data() + 64);
  FrameHeader other = write;  // to a QP this engine does not have: refused
  other.dst_qpn = p.sides[1].qpn + 1000;
  CHECK(responder.place(0, other).destination == nullptr);
  responder.delivered(0, other);
  CHECK(responder.stats().bytes_received == 0);
  responder.delivered(0, write);
  CHECK(responder.stats().bytes_received == 100);
}

TEST_CASE("a SEND without a receive gets an RNR NAK and succeeds on retry") {
  Pair p;
  p.fill(0, 0, 256, 5);
  p.post(0, SendOpcode::kSend, 1, 0, 256);
  p.post(0, SendOpcode::kSend, 2, 256, 256);  // queued behind the refused one
  p.hub.deliver();
  CHECK(p.poll(0).empty());
  CHECK(p.sides[0].engine->stats().rnr_retries == 1);
  REQUIRE(p.sides[0].engine->next_deadline().has_value());
  p.post_recv(1, 10, 1000, 256);
  p.post_recv(1, 11, 2000, 256);
  p.now += std::chrono::microseconds(50);
  p.sides[0].engine->advance_timers();  // too early: nothing happens
  p.hub.deliver();
  CHECK(p.poll(1).empty());
  p.now += std::chrono::microseconds(60);
  p.sides[0].engine->advance_timers();
  p.hub.deliver();
  auto sent = p.poll(0);
  auto received = p.poll(1);
  REQUIRE(sent.size() == 2);
  CHECK(sent[0].status == WcStatus::kSuccess);
  CHECK(sent[1].wr_id == 2);
  REQUIRE(received.size() == 2);
  CHECK(received[0].wr_id == 10);
  CHECK(p.holds(1, 1000, 256, 5));
  CHECK(p.sides[0].engine->qp_state(p.sides[0].qpn) == QpState::kRts);
}

TEST_CASE("RNR retries run out into an RNR retry exceeded error") {
  Pair p(1u << 20, 2);
  p.post(0, SendOpcode::kSend, 1, 0, 16);
  p.post(0, SendOpcode::kSend, 2, 0, 16);
  for (int attempt = 0; attempt < 3; ++attempt) {
    p.hub.deliver();
    p.now += std::chrono::milliseconds(1);
    p.sides[0].engine->advance_timers();
  }
  p.hub.deliver();
  auto sent = p.poll(0);
  REQUIRE(sent.size() == 2);
  CHECK(sent[0].status == WcStatus::kRnrRetryExceeded);
  CHECK(sent[1].status == WcStatus::kFlushError);
  CHECK(p.sides[0].engine->qp_state(p.sides[0].qpn) == QpState::kError);
}

TEST_CASE("remote access violations fail the request and move both QPs to ERR") {
  struct Case {
    const char* name;
    std::uint64_t remote_addr_offset;  // from the responder's iova; may wrap on purpose
    std::uint32_t length;
    bool bad_key;
    SendOpcode op;
  };
  const std::uint64_t region = 1 << 16;
  const Case cases[] = {
      {"unknown rkey", 0, 16, true, SendOpcode::kRdmaWrite},
      {"past the end", region - 10, 100, false, SendOpcode::kRdmaWrite},
      {"below the start", static_cast<std::uint64_t>(-8), 16, false, SendOpcode::kRdmaWrite},
      {"address + length overflows",
       std::numeric_limits<std::uint64_t>::max() - 0x10000000ull * 2 - 3, 16, false,
       SendOpcode::kRdmaWrite},
      {"read past the end", region - 1, 2, false, SendOpcode::kRdmaRead},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      Pair p;
      p.post_recv(1, 50, 0, 64);
      p.fill(0, 0, 100, 9);
      const std::uint32_t rkey = c.bad_key ? p.sides[1].keys.rkey ^ 0x5a5a00 : p.sides[1].keys.rkey;
      p.post(0, c.op, 1, 0, c.length, p.sides[1].iova + c.remote_addr_offset, rkey);
      p.post(0, SendOpcode::kSend, 2, 0, 8);
      p.hub.deliver();
      auto sent = p.poll(0);
      REQUIRE(sent.size() == 2);
      CHECK(sent[0].status == WcStatus::kRemoteAccessError);
      CHECK(sent[1].status == WcStatus::kFlushError);
      CHECK(p.sides[0].engine->qp_state(p.sides[0].qpn) == QpState::kError);
      CHECK(p.sides[1].engine->qp_state(p.sides[1].qpn) == QpState::kError);
      auto received = p.poll(1);
      REQUIRE(received.size() == 1);
      CHECK(received[0].status == WcStatus::kFlushError);
      const auto& memory = p.sides[1].memory;
      CHECK(
          std::all_of(memory.begin(), memory.end(), [](std::byte b) { return b == std::byte{0}; }));
    }
  }
}

TEST_CASE("a region without remote write access refuses RDMA WRITE") {
  Pair p(1u << 20, 7, kAccessLocalWrite | kAccessRemoteRead);
  p.post(0, SendOpcode::kRdmaWrite, 1, 0, 16, p.sides[1].iova, p.sides[1].keys.rkey);
  p.hub.deliver();
  auto sent = p.poll(0);
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].status == WcStatus::kRemoteAccessError);
}

TEST_CASE("a local SGE outside its region is a local protection error") {
  Pair p;
  p.post(0, SendOpcode::kSend, 1, (1 << 16) - 4, 8);
  auto sent = p.poll(0);
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].status == WcStatus::kLocalProtectionError);
  CHECK(p.sides[0].engine->qp_state(p.sides[0].qpn) == QpState::kError);
}

TEST_CASE("moving a QP to ERR flushes every outstanding request, and later posts") {
  Pair p;
  p.post_recv(0, 1, 0, 64);
  p.post_recv(0, 2, 64, 64);
  p.post(0, SendOpcode::kRdmaWrite, 3, 0, 64, p.sides[1].iova, p.sides[1].keys.rkey);
  QpAttributes a;
  a.state = QpState::kError;
  p.sides[0].engine->modify_qp(p.sides[0].qpn, a);
  p.post(0, SendOpcode::kSend, 4, 0, 8);
  p.post_recv(0, 5, 0, 8);
  p.hub.deliver();  // the queued WRITE was cancelled
  auto done = p.poll(0);
  REQUIRE(done.size() == 5);
  for (const Completion& c : done) {
    CHECK(c.status == WcStatus::kFlushError);
  }
  CHECK(p.hub.frames_delivered() == 0);
}

TEST_CASE("a SEND larger than the receive buffer fails on both sides") {
  Pair p;
  p.post_recv(1, 20, 0, 100);
  p.post_recv(1, 21, 100, 100);
  p.post(0, SendOpcode::kSend, 1, 0, 101);
  p.hub.deliver();
  auto sent = p.poll(0);
  auto received = p.poll(1);
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].status == WcStatus::kRemoteInvalidRequest);
  REQUIRE(received.size() == 2);
  CHECK(received[0].status == WcStatus::kLocalLengthError);
  CHECK(received[1].status == WcStatus::kFlushError);
  CHECK(p.sides[1].engine->qp_state(p.sides[1].qpn) == QpState::kError);
}

TEST_CASE("a lost peer gives error completions, never a hang") {
  Pair p;
  p.post(0, SendOpcode::kSend, 1, 0, 8);
  p.post(0, SendOpcode::kRdmaRead, 2, 0, 8, p.sides[1].iova, p.sides[1].keys.rkey);
  p.post_recv(0, 3, 0, 8);
  p.hub.disconnect(1);
  auto done = p.poll(0);
  REQUIRE(done.size() == 3);
  CHECK(done[0].status == WcStatus::kRetryExceeded);
  CHECK(done[1].status == WcStatus::kFlushError);
  CHECK(done[2].status == WcStatus::kFlushError);
  p.post(0, SendOpcode::kSend, 4, 0, 8);
  done = p.poll(0);
  REQUIRE(done.size() == 1);
  CHECK(done[0].status == WcStatus::kFlushError);
}

TEST_CASE("the QP state machine refuses illegal transitions and unknown GIDs") {
  LocalHub hub;
  Engine engine(hub.add_node(0, {"me"}));
  hub.attach(0, engine);
  auto pd = engine.alloc_pd();
  auto cq = engine.create_cq();
  auto qpn = engine.create_qp(pd, cq, cq);
  QpAttributes a;
  a.state = QpState::kRts;
  CHECK_THROWS_AS(engine.modify_qp(qpn, a), VerbsError);
  CHECK_THROWS_AS(engine.post_send(qpn, SendWr{}), VerbsError);
  a.state = QpState::kInit;
  engine.modify_qp(qpn, a);
  CHECK_THROWS_AS(engine.post_send(qpn, SendWr{}), VerbsError);
  a.state = QpState::kRtr;
  a.remote_gid = "nobody";
  CHECK_THROWS_WITH(engine.modify_qp(qpn, a), Catch::Contains("not known"));
  CHECK(engine.qp_state(qpn) == QpState::kInit);
  CHECK_THROWS_AS(engine.dealloc_pd(pd), VerbsError);
}

TEST_CASE("loopback: two QPs of one engine talk to each other") {
  LocalHub hub;
  Engine engine(hub.add_node(0, {"me"}));
  hub.attach(0, engine);
  auto pd = engine.alloc_pd();
  auto cq = engine.create_cq();
  std::vector<std::byte> memory(4096);
  auto keys = engine.reg_mr(pd, memory.data(), 0x1000, memory.size(),
                            kAccessLocalWrite | kAccessRemoteWrite);
  auto a = engine.create_qp(pd, cq, cq);
  auto b = engine.create_qp(pd, cq, cq);
  for (auto [self, peer] : {std::pair{a, b}, std::pair{b, a}}) {
    QpAttributes attr;
    attr.state = QpState::kInit;
    attr.access = kAccessRemoteWrite;
    engine.modify_qp(self, attr);
    attr.state = QpState::kRtr;
    attr.remote_gid = "me";
    attr.remote_qpn = peer;
    engine.modify_qp(self, attr);
    attr.state = QpState::kRts;
    engine.modify_qp(self, attr);
  }
  memory[0] = std::byte{0x77};
  SendWr wr;
  wr.wr_id = 9;
  wr.opcode = SendOpcode::kRdmaWrite;
  wr.sge = {0x1000, 1, keys.lkey};
  wr.remote_addr = 0x1000 + 2048;
  wr.rkey = keys.rkey;
  engine.post_send(a, wr);
  hub.deliver();
  Completion c[4];
  REQUIRE(engine.poll_cq(cq, c) == 1);
  CHECK(c[0].wr_id == 9);
  CHECK(memory[2048] == std::byte{0x77});
}

}  // namespace
}  // namespace ernic::emu
