// Two instances in their users' own loops, one per thread as two load generators would have
// them in two processes: the real mesh between them, every wait turning its own loop.
#include "runtime/in_loop_device.h"

#include <unistd.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <cstring>
#include <future>
#include <stdexcept>

#include "test_process.h"

namespace ernic::emu {
namespace {

using namespace std::chrono_literals;

constexpr std::size_t kBytes = 64u << 10;

InstanceConfig config_for(Backend::Kind kind, const std::string& port, const char* gid) {
  InstanceConfig c;
  c.backend.kind = kind;
  c.backend.host = "127.0.0.1";
  c.backend.port = static_cast<std::uint16_t>(std::stoi(port));
  c.gids = {*canonical_gid(gid)};
  c.token = "in-loop-test";
  c.log_level = LogLevel::kError;
  return c;
}

struct Published {
  std::string gid;
  std::uint32_t qpn = 0;
  MemoryKeys keys;
  std::uint64_t address = 0;
};

// One side's QP and buffer, connected to the other side's once that is published.
struct Side {
  explicit Side(Device& d) : device(d) {
    pd = d.alloc_pd();
    cq = d.create_cq();
    memory = d.allocate(kBytes);
    keys =
        d.reg_mr(pd, memory, 0, kBytes, kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead);
    qpn = d.create_qp(pd, cq, cq);
    QpAttributes a;
    a.state = QpState::kInit;
    a.access = kAccessRemoteWrite | kAccessRemoteRead;
    d.modify_qp(qpn, a);
  }
  Published publish() const {
    return {device.gids().front(), qpn, keys, reinterpret_cast<std::uint64_t>(memory.data)};
  }
  void connect(const Published& peer) {
    QpAttributes a;
    a.state = QpState::kRtr;
    a.remote_gid = peer.gid;
    a.remote_qpn = peer.qpn;
    device.modify_qp(qpn, a);
    a.state = QpState::kRts;
    device.modify_qp(qpn, a);
  }
  SendWr wr(SendOpcode op, std::size_t offset, std::uint32_t length) const {
    SendWr w;
    w.wr_id = offset;
    w.opcode = op;
    w.sge = {reinterpret_cast<std::uint64_t>(memory.data + offset), length, keys.lkey};
    return w;
  }
  // Throws rather than fails an assertion: the manager's side runs on another thread, where
  // Catch's assertions may not be used.
  Device::Completion next() {
    Device::Completion c;
    while (device.poll_cq(cq, {&c, 1}) == 0) {
      if (!device.wait(0us, 5000ms)) {
        throw std::runtime_error("no completion within 5 s");
      }
    }
    if (!c.ok()) {
      throw std::runtime_error("completion with status " + std::to_string(c.status));
    }
    return c;
  }

  Device& device;
  std::uint32_t pd = 0, cq = 0, qpn = 0;
  Device::Memory memory;
  MemoryKeys keys;
};

// Waits for `future` while `device` keeps its instance running.
template <typename T>
T await(Device& device, std::future<T>& future) {
  if (!device.wait_until([&] { return future.wait_for(0s) == std::future_status::ready; }, 0us,
                         10000ms)) {
    throw std::runtime_error("the other side did not get there within 10 s");
  }
  return future.get();
}

}  // namespace

TEST_CASE("an instance in the load generator's loop carries SEND, WRITE and READ over the mesh") {
  const std::string port = port_for_test(301);
  std::promise<Published> manager_side, worker_side;
  std::future<Published> from_manager = manager_side.get_future();
  std::future<Published> from_worker = worker_side.get_future();
  // As perftest's server says READY: its QP is connected and its receive posted.
  std::promise<void> manager_ready, worker_done;
  std::future<void> may_send = manager_ready.get_future();
  std::future<void> worker_finished = worker_done.get_future();
  struct Seen {
    std::uint64_t wr_id = 0;
    std::uint32_t byte_len = 0;
    std::string received, written;
  };

  std::future<Seen> manager = std::async(std::launch::async, [&] {
    InLoopDevice device(config_for(Backend::Kind::kTcpManager, port, "10.9.0.1"), 10s);
    Side side(device);
    manager_side.set_value(side.publish());
    side.connect(await(device, from_worker));
    RecvWr recv;
    recv.wr_id = 7;
    recv.sge = {reinterpret_cast<std::uint64_t>(side.memory.data), 16, side.keys.lkey};
    device.post_recv(side.qpn, recv);
    manager_ready.set_value();
    Seen seen;
    const Device::Completion got = side.next();
    seen.wr_id = got.wr_id;
    seen.byte_len = got.byte_len;
    seen.received.assign(reinterpret_cast<const char*>(side.memory.data), 5);
    // The worker's WRITE and READ need this loop to run: the passive side keeps waiting.
    await(device, worker_finished);
    seen.written.assign(reinterpret_cast<const char*>(side.memory.data + 4096), 6);
    return seen;
  });
  InLoopDevice device(config_for(Backend::Kind::kTcpWorker, port, "10.9.0.2"), 10s);
  Side side(device);
  worker_side.set_value(side.publish());
  const Published peer = await(device, from_manager);
  side.connect(peer);
  await(device, may_send);
  std::memcpy(side.memory.data, "hello", 5);
  device.post_send(side.qpn, side.wr(SendOpcode::kSend, 0, 5));
  CHECK(side.next().byte_len == 5);

  std::memcpy(side.memory.data + 100, "placed", 6);
  SendWr write = side.wr(SendOpcode::kRdmaWrite, 100, 6);
  write.remote_addr = peer.address + 4096;
  write.rkey = peer.keys.rkey;
  device.post_send(side.qpn, write);
  side.next();
  SendWr read = side.wr(SendOpcode::kRdmaRead, 200, 6);
  read.remote_addr = peer.address + 4096;
  read.rkey = peer.keys.rkey;
  device.post_send(side.qpn, read);
  side.next();
  CHECK(std::string(reinterpret_cast<const char*>(side.memory.data + 200), 6) == "placed");

  // Nothing more arrives: a wait ends at its timeout, the instance still running.
  Device::Completion none;
  CHECK_FALSE(device.wait(0us, 50ms));
  CHECK(device.poll_cq(side.cq, {&none, 1}) == 0);
  worker_done.set_value();
  const Seen seen = manager.get();
  CHECK(seen.wr_id == 7);
  CHECK(seen.byte_len == 5);
  CHECK(seen.received == "hello");
  CHECK(seen.written == "placed");
}

TEST_CASE(
    "an in-loop instance waits for a descriptor with its loop running, and reports a lost "
    "manager") {
  const std::string port = port_for_test(302);
  std::promise<void> worker_joined, manager_may_go;
  std::future<void> joined = worker_joined.get_future();
  std::future<void> may_go = manager_may_go.get_future();
  std::future<void> manager = std::async(std::launch::async, [&] {
    InLoopDevice device(config_for(Backend::Kind::kTcpManager, port, "10.9.1.1"), 10s);
    // A worker can join only while this waits: the wait turns the loop.
    await(device, joined);
    await(device, may_go);
  });
  InLoopDevice device(config_for(Backend::Kind::kTcpWorker, port, "10.9.1.2"), 10s);
  worker_joined.set_value();

  int pipe_fds[2];
  REQUIRE(pipe(pipe_fds) == 0);
  CHECK_FALSE(device.wait_readable(pipe_fds[0], std::chrono::steady_clock::now() + 20ms));
  REQUIRE(write(pipe_fds[1], "x", 1) == 1);
  CHECK(device.wait_readable(pipe_fds[0], std::chrono::steady_clock::now() + 5s));
  close(pipe_fds[0]);
  close(pipe_fds[1]);

  manager_may_go.set_value();
  manager.get();  // the manager's instance is gone with its device
  REQUIRE_THROWS_WITH(device.wait(0us, 10000ms), Catch::Contains("the instance failed") &&
                                                     Catch::Contains("lost the manager"));
}

TEST_CASE("an in-loop instance is refused without a mesh, and fails when its manager is absent") {
  CHECK_THROWS_WITH(InLoopDevice(config_for(Backend::Kind::kLoopback, "1", "10.9.2.1"), 1s),
                    Catch::Contains("needs a mesh backend"));
  const std::string nobody = port_for_test(303);
  CHECK_THROWS_WITH(InLoopDevice(config_for(Backend::Kind::kTcpWorker, nobody, "10.9.2.2"), 10s),
                    Catch::Contains("cannot join the manager"));
}

}  // namespace ernic::emu
