// libFuzzer target, stateful: an instance's connection handling end to end. A manager's real
// MeshFabric (an Engine behind it) listens on loopback inside this process; each input is one
// peer connection, driven through the event loop, the accept path, the frame reader, the
// handshake and the manager protocol. The first byte says how far the harness takes the
// handshake before the rest of the input goes on the wire:
//   0: not at all (the input is the handshake), 1: after a HELLO (the input answers the
//   CHALLENGE), 2: after a full authentication and registration as a worker (the input
//   speaks as a member of the mesh: topology, heartbeats, data frames).
// The peer then half-closes; the instance must close its side, and stay consistent, for every
// input (ASan and UBSan watch). Peers stay connected across inputs only through the fabric's
// own state (node ids, GIDs, counters), which is the state under test.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "engine/engine.h"
#include "engine/wire.h"
#include "mesh/auth.h"
#include "mesh/mesh_fabric.h"
#include "runtime/event_loop.h"
#include "runtime/log.h"

namespace {

using namespace ernic::emu;
using Bytes = std::basic_string<std::byte>;

constexpr std::string_view kToken = "fuzz-token";

Bytes frame(FrameOp op, const Bytes& body) {
  FrameHeader h;
  h.op = op;
  h.payload_length = static_cast<std::uint32_t>(body.size());
  const auto header = encode_header(h);
  Bytes out(header.begin(), header.end());
  return out + body;
}

struct Instance {
  Instance() : mesh(loop, log, config()), engine(mesh) {
    log.open("", LogLevel::kNone);
    mesh.attach(engine);
    mesh.start([] {}, [](const std::string&) {});
    loop.set_after_work([this] { mesh.flush(); });
  }
  static MeshConfig config() {
    MeshConfig c;
    c.role = MeshConfig::Role::kManager;
    c.token = std::string(kToken);
    c.gids = {"fe80::e7:ff:fe00:1"};
    c.handshake_timeout = std::chrono::milliseconds(50);
    return c;
  }
  EventLoop loop{std::chrono::microseconds(0)};
  Logger log;
  MeshFabric mesh;
  Engine engine;
};

// The fuzzer's side of one connection: it sends what the harness and the input say and reads
// what the instance answers, until the instance closes.
class Peer {
 public:
  Peer(Instance& instance, int stage, const std::uint8_t* data, std::size_t size)
      : instance_(instance), stage_(stage), input_(reinterpret_cast<const std::byte*>(data), size) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(instance.mesh.listen_port());
    inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  ~Peer() { close(fd_); }

  void run() {
    if (!connected_) {
      return;
    }
    if (stage_ == 0) {
      send_input();
    } else {
      ByteWriter w;
      w.str("ERNIC-MESH");
      w.u16(kMeshVersionMajor);
      w.u16(kMeshVersionMinor);
      w.u32(kUnassignedNode);
      w.u32(1);
      w.raw(nonce_);
      put(frame(FrameOp::kHello, w.bytes()));
    }
    EventLoop& loop = instance_.loop;
    loop.add_fd(fd_, EPOLLIN, [this](std::uint32_t) { readable(); });
    const auto limit = loop.add_timer(EventLoop::Clock::now() + std::chrono::milliseconds(500),
                                      [&loop] { loop.stop(); });
    loop.restart();
    loop.run();
    loop.cancel_timer(limit);
    loop.remove_fd(fd_);
  }

 private:
  void put(const Bytes& bytes) {
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      if (n <= 0) {
        return;  // the instance closed on us: fine
      }
      done += static_cast<std::size_t>(n);
    }
  }
  void send_input() {
    put(Bytes(input_));
    shutdown(fd_, SHUT_WR);
    sent_input_ = true;
  }
  // Answers the CHALLENGE (stage 2) or hands over to the input (stage 1).
  void on_challenge(std::span<const std::byte> body) {
    if (stage_ == 1) {
      send_input();
      return;
    }
    ByteReader r(body);
    r.u16();
    r.u16();
    r.u32();
    r.u32();
    Nonce theirs{};
    r.bytes(theirs);
    const Proof proof = make_proof(kToken, "dialer", theirs, nonce_);
    put(frame(FrameOp::kAuthenticate, Bytes(proof.begin(), proof.end())));
    ByteWriter reg;
    reg.u32(kUnassignedNode);
    reg.str("127.0.0.1");
    reg.u16(1);
    reg.str("02:00:00:00:00:02");
    reg.u16(1);
    reg.str("fe80::2");
    put(frame(FrameOp::kRegister, reg.bytes()));
    send_input();
  }
  void readable() {
    std::byte buffer[65536];
    const ssize_t n = recv(fd_, buffer, sizeof buffer, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
      instance_.loop.stop();  // the instance closed the connection: this input is done
      return;
    }
    if (n < 0 || sent_input_) {
      return;
    }
    received_.append(buffer, static_cast<std::size_t>(n));
    if (received_.size() < kFrameHeaderSize) {
      return;
    }
    FrameHeader h;
    if (!decode_header(
             std::span<const std::byte, kFrameHeaderSize>(received_.data(), kFrameHeaderSize), h)
             .empty() ||
        h.op != FrameOp::kChallenge) {
      send_input();
      return;
    }
    if (received_.size() >= kFrameHeaderSize + h.payload_length) {
      on_challenge({received_.data() + kFrameHeaderSize, h.payload_length});
    }
  }

  Instance& instance_;
  int stage_;
  Bytes input_;
  int fd_ = -1;
  bool connected_ = false;
  bool sent_input_ = false;
  Nonce nonce_ = random_nonce();
  Bytes received_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static Instance* instance = new Instance();  // one instance for the whole run: it is stateful
  // Small enough for the socket buffer: the harness writes before the instance runs.
  if (size == 0 || size > (1u << 14)) {
    return 0;
  }
  Peer peer(*instance, data[0] % 3, data + 1, size - 1);
  peer.run();
  return 0;
}
