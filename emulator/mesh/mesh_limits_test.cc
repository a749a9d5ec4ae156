// Limits and the handshake against a real instance: silent and half-finished handshakes, data
// before authentication, a duplicate node id, a broken ring, idle connections beyond the bound
// and beyond the descriptor limit. The instance lives, refuses, logs, and still carries traffic
// afterwards.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstddef>
#include <cstring>
#include <fstream>
#include <optional>
#include <thread>
#include <vector>

#include "engine/wire.h"
#include "frontend/fd_passing.h"
#include "mesh/auth.h"
#include "mesh/byte_ring.h"
#include "mesh/mesh_fabric.h"
#include "mesh/mesh_test_support.h"
#include "supervisor.h"
#include "test_dir.h"
#include "test_process.h"

namespace ernic::emu {
namespace {

using namespace std::chrono_literals;
using Bytes = std::basic_string<std::byte>;

const std::string kToken = "mesh-test-token";

// A blocking TCP connection to the instance's mesh port (reads and connects time out).
int dial(std::uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  timeval limit{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

void send_frame(int fd, FrameHeader h, const Bytes& body) {
  h.payload_length = static_cast<std::uint32_t>(body.size());
  const auto header = encode_header(h);
  REQUIRE(send(fd, header.data(), header.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(header.size()));
  // The instance may close before it took the body (that is what some tests want).
  [[maybe_unused]] auto ignored = send(fd, body.data(), body.size(), MSG_NOSIGNAL);
}

bool read_exact(int fd, std::byte* p, std::size_t n) {
  while (n > 0) {
    const ssize_t got = read(fd, p, n);
    if (got <= 0) {
      return false;
    }
    p += got;
    n -= static_cast<std::size_t>(got);
  }
  return true;
}

struct Frame {
  FrameHeader header;
  Bytes body;
};

// The next frame from the instance, or nullopt when it closed the connection.
std::optional<Frame> read_frame(int fd) {
  EncodedHeader bytes{};
  Frame f;
  if (!read_exact(fd, bytes.data(), bytes.size())) {
    return std::nullopt;
  }
  REQUIRE(decode_header(bytes, f.header).empty());
  f.body.resize(f.header.payload_length);
  if (!read_exact(fd, f.body.data(), f.body.size())) {
    return std::nullopt;
  }
  return f;
}

// True once the instance has closed `fd` (reads end), false if it still held it after `limit`.
bool closed_by_instance(int fd, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  std::byte buffer[4096];
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 50) > 0) {
      const ssize_t n = read(fd, buffer, sizeof buffer);
      if (n == 0 || (n < 0 && errno == ECONNRESET)) {
        return true;
      }
    }
  }
  return false;
}

Bytes hello(NodeId node, const Nonce& nonce) {
  ByteWriter w;
  w.str("ERNIC-MESH");
  w.u16(kMeshVersionMajor);
  w.u16(kMeshVersionMinor);
  w.u32(node);
  w.u32(1);
  w.raw(nonce);
  return w.bytes();
}

FrameHeader control(FrameOp op) {
  FrameHeader h;
  h.op = op;
  return h;
}

// Goes through the handshake on `fd` as node `node`, with the right token.
void authenticate(int fd, NodeId node) {
  const Nonce mine = random_nonce();
  send_frame(fd, control(FrameOp::kHello), hello(node, mine));
  const auto challenge = read_frame(fd);
  REQUIRE(challenge);
  REQUIRE(challenge->header.op == FrameOp::kChallenge);
  ByteReader r(challenge->body);
  r.u16();
  r.u16();
  r.u32();
  r.u32();
  Nonce theirs{};
  r.bytes(theirs);
  REQUIRE_FALSE(r.failed());
  const Proof proof = make_proof(kToken, "dialer", theirs, mine);
  send_frame(fd, control(FrameOp::kAuthenticate), Bytes(proof.begin(), proof.end()));
}

// Polls the instance's log until it holds `text`.
bool log_shows(const std::filesystem::path& log, const std::string& text) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (read_all(log).find(text) == std::string::npos) {
    if (std::chrono::steady_clock::now() > deadline) {
      return false;
    }
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t count = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
    ++count;
  }
  return count;
}

void carries_traffic(const Supervisor& s) {
  exchange_between(s.instances()[0].socket.string(), s.instances()[1].socket.string(), 4);
}

TEST_CASE("silent, half-finished and data-first connections are closed with a logged reason") {
  TestDir dir("handshake");
  Supervisor supervisor;
  SupervisorConfig config = mesh_config(dir.path(), 2, kToken);
  config.extra_args = {"--handshake-timeout-ms", "500"};
  supervisor.start(config);
  const auto& manager = supervisor.instances()[0];

  const int data_first = dial(manager.mesh_port);
  FrameHeader write_frame;
  write_frame.op = FrameOp::kWrite;
  write_frame.total_length = 65536;
  send_frame(data_first, write_frame, Bytes(65536, std::byte{0x5a}));
  CHECK(closed_by_instance(data_first, 2000ms));
  CHECK(log_shows(manager.log, "data frame before the handshake completed"));

  const int silent = dial(manager.mesh_port);
  const int half = dial(manager.mesh_port);
  send_frame(half, control(FrameOp::kHello), hello(7, random_nonce()));
  const auto challenge = read_frame(half);
  REQUIRE(challenge);
  CHECK(challenge->header.op == FrameOp::kChallenge);
  CHECK(closed_by_instance(silent, 3000ms));
  CHECK(closed_by_instance(half, 3000ms));
  CHECK(log_shows(manager.log, "did not complete the handshake within 500 ms"));
  for (int fd : {data_first, silent, half}) {
    close(fd);
  }
  CHECK(supervisor.check_alive().empty());
  carries_traffic(supervisor);
}

TEST_CASE("a node id stays bound to its connection: a second claim is refused") {
  TestDir dir("duplicate");
  Supervisor supervisor;
  supervisor.start(mesh_config(dir.path(), 2, kToken));
  const auto& manager = supervisor.instances()[0];
  // An authenticated peer (it knows the token) claims node 1, the worker's id.
  const int fd = dial(manager.mesh_port);
  authenticate(fd, 1);
  const auto answer = read_frame(fd);
  REQUIRE(answer);
  CHECK(answer->header.op == FrameOp::kReject);
  CHECK(closed_by_instance(fd, 2000ms));
  close(fd);
  CHECK(log_shows(manager.log, "node 1 is already connected from"));
  // The real node 1 kept its place.
  CHECK(supervisor.check_mesh().empty());
  carries_traffic(supervisor);
}

// The instance's local socket (mesh_sockets.cc): the abstract name its TCP address gives it.
int dial_local(std::uint16_t port) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  timeval limit{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string name = "ernic-mesh/127.0.0.1:" + std::to_string(port);
  name.copy(addr.sun_path + 1, name.size());
  const auto length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&addr), length) == 0);
  return fd;
}

// kRing with `fds` riding on its first byte.
void send_ring(int fd, const std::vector<int>& fds) {
  ByteWriter body;
  body.u64(256u << 10);
  FrameHeader h = control(FrameOp::kRing);
  h.payload_length = static_cast<std::uint32_t>(body.bytes().size());
  const auto header = encode_header(h);
  Bytes frame(header.begin(), header.end());
  frame += body.bytes();
  REQUIRE(send_message(fd, frame, fds));
}

// A local peer's stream moves into a ring only with the ring's files, its memfd sealed against
// resizing (a file that shrank under the mapping would kill the instance with SIGBUS): anything
// else closes that one connection, and the instance goes on.
TEST_CASE("a ring without its files or in an unsealed file closes its connection, no more") {
  TestDir dir("bad-ring");
  Supervisor supervisor;
  supervisor.start(mesh_config(dir.path(), 2, kToken));
  const auto& manager = supervisor.instances()[0];
  const int bare = dial_local(manager.mesh_port);
  authenticate(bare, kUnassignedNode);  // as a worker about to register
  send_ring(bare, {});
  CHECK(closed_by_instance(bare, 2000ms));
  CHECK(log_shows(manager.log, "a ring without its files"));

  const auto sealed = ByteRing::create();
  struct stat file {};
  REQUIRE(fstat(sealed->fd(), &file) == 0);
  const int unsealed = memfd_create("unsealed-ring", MFD_CLOEXEC);
  REQUIRE(ftruncate(unsealed, file.st_size) == 0);
  const int wake[2] = {eventfd(0, EFD_CLOEXEC), eventfd(0, EFD_CLOEXEC)};
  const int shrinkable = dial_local(manager.mesh_port);
  authenticate(shrinkable, kUnassignedNode);
  send_ring(shrinkable, {unsealed, wake[0], wake[1]});
  CHECK(closed_by_instance(shrinkable, 2000ms));
  CHECK(log_shows(manager.log, "its ring's file is not sealed against resizing"));
  for (int fd : {bare, shrinkable, unsealed, wake[0], wake[1]}) {
    close(fd);
  }
  CHECK(supervisor.check_alive().empty());
  CHECK(supervisor.check_mesh().empty());
  carries_traffic(supervisor);
}

// Opens `count` connections to `port`; those the instance refused come back closed.
std::vector<int> open_idle(std::uint16_t port, int count) {
  std::vector<int> fds;
  for (int i = 0; i < count; ++i) {
    const int fd = dial(port);
    if (fd >= 0) {
      fds.push_back(fd);
    }
  }
  return fds;
}

int count_closed(const std::vector<int>& fds, std::chrono::milliseconds each) {
  int closed = 0;
  for (int fd : fds) {
    closed += closed_by_instance(fd, each) ? 1 : 0;
  }
  return closed;
}

rlimit descriptor_limit(pid_t pid) {
  rlimit limit{};
  prlimit(pid, RLIMIT_NOFILE, nullptr, &limit);
  return limit;
}

TEST_CASE("idle connections beyond the bound and the descriptor limit are refused") {
  TestDir dir("limits");
  Supervisor supervisor;
  // Started with a soft descriptor limit below the hard one: the instance raises its own.
  const rlimit own = descriptor_limit(0);
  rlimit lowered = own;
  lowered.rlim_cur = std::min<rlim_t>(own.rlim_max, 256);
  setrlimit(RLIMIT_NOFILE, &lowered);
  supervisor.start(mesh_config(dir.path(), 2, kToken));
  setrlimit(RLIMIT_NOFILE, &own);
  const auto& manager = supervisor.instances()[0];
  CHECK(descriptor_limit(manager.pid).rlim_cur == own.rlim_max);
  // The worker's lanes are handshakes too: once they are done, the bound is the test's alone.
  REQUIRE(observe([&] { return Supervisor::read_stats(manager.stats)["mesh_lanes"] == "3"; },
                  std::chrono::seconds(10)));

  // More connections than may wait in the handshake at once: the surplus is closed.
  const int bound = 64;
  auto idle = open_idle(manager.mesh_port, bound + 36);
  std::vector<int> refused(idle.begin() + bound, idle.end());
  CHECK(count_closed(refused, 2000ms) == 36);
  CHECK(count_closed({idle.begin(), idle.begin() + bound}, 1ms) == 0);
  CHECK(log_shows(manager.log, "connections are still in the handshake: refusing new ones"));
  CHECK(occurrences(read_all(manager.log), "refusing new ones") == 1);
  for (int fd : idle) {
    close(fd);
  }

  // At the descriptor limit the instance refuses instead of dying, and its stats file writes
  // fail without harm.
  const rlimit before = descriptor_limit(manager.pid);
  const rlimit tight{48, before.rlim_max};  // raising a hard limit back needs CAP_SYS_RESOURCE
  REQUIRE(prlimit(manager.pid, RLIMIT_NOFILE, &tight, nullptr) == 0);
  std::vector<int> held;
  for (int round = 0; round < 4; ++round) {
    auto more = open_idle(manager.mesh_port, 40);
    held.insert(held.end(), more.begin(), more.end());
  }
  CHECK(log_shows(manager.log, "out of file descriptors"));
  CHECK(log_shows(manager.log, "stats file not updated"));
  CHECK(supervisor.check_alive().empty());
  for (int fd : held) {
    close(fd);
  }
  REQUIRE(prlimit(manager.pid, RLIMIT_NOFILE, &before, nullptr) == 0);
  CHECK(log_shows(manager.log, "stats file updated again"));
  CHECK(supervisor.check_alive().empty());
  CHECK(supervisor.check_mesh().empty());
  carries_traffic(supervisor);
  CHECK(perf_passes(supervisor, dir.path(), 3));
}

}  // namespace
}  // namespace ernic::emu
