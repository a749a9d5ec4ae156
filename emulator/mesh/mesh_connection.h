#pragma once

// Private to the mesh: one TCP connection of MeshFabric, shared by mesh_fabric.cc (sockets,
// framing, the data path), mesh_handshake.cc and mesh_manager.cc.

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "engine/wire.h"
#include "mesh/auth.h"
#include "mesh/byte_ring.h"
#include "mesh/frame_reader.h"
#include "mesh/mesh_fabric.h"

namespace ernic::emu {
namespace mesh_detail {

using Bytes = std::basic_string<std::byte>;

// Bytes one connection may move in one turn of the event loop before everything else the
// instance serves has its turn (the front end's doorbells, the other peers). Reading a
// connection until 16 MiB (or writing until EAGAIN) made a latency message wait up to 8 ms
// behind another peer's bulk WRITEs (issue 12 item 7). 64 KiB turns cost 25-40 % more CPU per
// byte than the old code, 128 KiB less (docs/emulator-performance-log.md, "Several tenants: the
// first runs and the stall").
inline constexpr std::size_t kTurnBytes = 128u << 10;
// Payload bytes a connection sends by reference ahead of what the peer said it placed
// (kCopied): a frame of another QP on that connection waits behind at most this much copying
// in the peer, where the socket could hold thousands of 64-byte references (megabytes each).
inline constexpr std::uint64_t kCopyWindowBytes = 2u << 20;
// The receiver acknowledges this much at once, and whatever it has when reading stops; less
// than the window minus the largest segment, so a sender waiting for room always gets it.
inline constexpr std::uint64_t kCopiedBatchBytes = 512u << 10;

inline std::string errno_text() {
  return std::strerror(errno);
}

// Descriptors that go with a frame (SCM_RIGHTS), closed here once sent or dropped.
struct PassedFds {
  std::vector<int> fds;
  explicit PassedFds(std::vector<int> f) : fds(std::move(f)) {}
  ~PassedFds() {
    for (int fd : fds) {
      close(fd);
    }
  }
  PassedFds(const PassedFds&) = delete;
  PassedFds& operator=(const PassedFds&) = delete;
};

// One direction of a local connection in a ByteRing (mesh_rings.cc): the eventfd this side
// waits on in its event loop, and the one it rings for the peer.
struct RingEnd {
  std::unique_ptr<ByteRing> ring;
  int wait_fd = -1;
  int wake_fd = -1;
  bool peer_closed = false;  // reading: the socket said end of stream
  RingEnd(std::unique_ptr<ByteRing> r, int wait, int wake)
      : ring(std::move(r)), wait_fd(wait), wake_fd(wake) {}
  ~RingEnd() {
    close(wait_fd);
    close(wake_fd);
  }
  RingEnd(const RingEnd&) = delete;
  RingEnd& operator=(const RingEnd&) = delete;
};

}  // namespace mesh_detail

struct MeshFabric::OutFrame {
  EncodedHeader header;
  const std::byte* payload = nullptr;
  std::uint32_t length = 0;
  std::size_t written = 0;
  std::shared_ptr<mesh_detail::Bytes> owned;  // control frames own their body
  std::uint32_t src_qpn = 0;
  bool data = false;            // may be cancelled
  bool request = false;         // SEND, WRITE or READ request: dropped when rewinding after RNR
  bool small = false;           // a data frame of at most kSmallFrameBytes of payload
  std::uint64_t queued_at = 0;  // the connection's bytes_written when it was queued
  // A payload sent by reference (mesh_shared_memory.cc): `payload` is then the 16-byte
  // reference, `source` and `referenced` the payload itself.
  const std::byte* source = nullptr;
  std::uint32_t referenced = 0;
  // kShareMemory: the memfd that goes with it; kRing: the ring's memfd and eventfds.
  std::shared_ptr<const mesh_detail::PassedFds> passed_fds;
  bool fd_sent = false;
  bool switches_to_ring = false;    // kRing: the last bytes on the socket, the ring's after it
  std::uint64_t shared_region = 0;  // kShareMemory: the region it shares
  std::size_t size() const { return kFrameHeaderSize + length; }
  // What it counts for in the wire window: the bytes it moves, on the wire or by reference.
  std::size_t weight() const { return size() + referenced; }
};
struct MeshFabric::Connection final : FrameReader::Sink {
  enum class Phase { kConnecting, kAwaitChallenge, kAwaitHello, kAwaitAuth, kEstablished, kClosed };
  using OutFrame = MeshFabric::OutFrame;
  struct PeerRegion {
    const std::byte* base;
    std::size_t size;
  };

  Connection(MeshFabric& m, int f, bool d, bool l) : mesh(m), fd(f), dialer(d), local(l) {}
  ~Connection() override {
    for (const auto& [id, region] : shared_in) {
      munmap(const_cast<std::byte*>(region.base), region.size);
    }
    for (int received : received_fds) {
      close(received);
    }
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  Placement place(const FrameHeader& h) override {
    if (phase != Phase::kEstablished || peer == kUnassignedNode || mesh.receiver_ == nullptr) {
      return {};
    }
    accepted = true;
    return mesh.receiver_->place(peer, h);
  }
  void delivered(const FrameHeader& h) override {
    if (reader.delivering_reference()) {
      mesh.count_copied(*this, h.payload_length);
    }
    if (accepted) {
      accepted = false;
      mesh.receiver_->delivered(peer, h);
    }
  }
  bool control(const FrameHeader& h, std::span<const std::byte> body) override {
    return mesh.on_control(*this, h, body);
  }
  bool accepts_data() const override { return phase == Phase::kEstablished; }
  bool copy_elsewhere(std::byte* destination, const std::byte* source, std::uint32_t length,
                      bool streaming) override {
    return mesh.copy_elsewhere(*this, destination, source, length, streaming);
  }
  const std::byte* referenced(std::uint64_t region, std::uint64_t offset,
                              std::uint32_t length) override {
    auto it = shared_in.find(region);
    if (it == shared_in.end() || offset > it->second.size || length > it->second.size - offset) {
      return nullptr;
    }
    return it->second.base + offset;
  }

  // The handshake (mesh_handshake.cc). Each returns false once it refused or closed `*this`.
  bool on_hello(ByteReader& r);
  bool on_authenticate(FrameOp op, ByteReader& r);
  bool on_challenge(FrameOp op, ByteReader& r);
  // The manager protocol on an established connection (mesh_manager.cc).
  bool on_manager_frame(FrameOp op, ByteReader& r);
  // Asks the manager for a node id, offering this node's address and GIDs.
  void send_registration();

  MeshFabric& mesh;
  int fd;
  bool dialer;
  bool local;                             // a unix socket to a peer in this network namespace
  bool peer_takes_references = false;     // its handshake said so (mesh_handshake.cc)
  bool peer_acknowledges_copies = false;  // it sends kCopied: the copy window applies
  bool peer_reads_rings = false;          // it reads a ring we offer (kRing)
  // The stream in shared memory (mesh_rings.cc). Writing: offered once established; bytes go
  // into it once kRing is all on the socket. Reading: from the peer's kRing on.
  bool ring_offered = false;
  std::unique_ptr<mesh_detail::RingEnd> ring_out;
  bool writing_to_ring = false;
  bool waiting_for_room = false;  // the ring was full: its room eventfd resumes the writing
  std::unique_ptr<mesh_detail::RingEnd> ring_in;
  std::uint64_t descriptors_received = 0;  // markers read from the socket since the ring
  // The copy window (mesh_shared_memory.cc): bytes sent by reference the peer has not said it
  // placed, the QPs whose next frame waits for room in it, and (receiving) bytes placed by
  // reference not acknowledged yet.
  std::uint64_t referenced_in_flight = 0;
  std::deque<std::uint32_t> waiting_for_copies;
  std::uint64_t copied_unacknowledged = 0;
  bool registering = false;     // this is the worker's connection to the manager
  std::uint32_t lane = 0;       // 0: the peer's primary connection; else an extra data lane
  bool lane_confirmed = false;  // a lane the acceptor took (this node lists it in lanes_)
  std::string dial_host;        // what dial() connected to, for the lanes that follow
  std::uint16_t dial_port = 0;
  bool counted = false;  // counted in stats_.peers: uncounted exactly once when it closes
  bool close_after_flush = false;
  bool accepted = false;
  bool in_handshake = false;  // accepted, not yet authenticated: counted in unauthenticated_
  Phase phase = Phase::kConnecting;
  NodeId peer = kUnassignedNode;
  NodeId claimed_peer = kUnassignedNode;
  std::string label;
  Nonce my_nonce = random_nonce();
  Nonce peer_nonce{};
  FrameReader reader;
  std::deque<OutFrame> control_queue;
  std::map<std::uint32_t, std::deque<OutFrame>> qp_queues;
  std::deque<std::uint32_t> round_robin;
  std::deque<OutFrame> wire;
  std::size_t wire_bytes = 0;
  std::uint64_t bytes_written = 0;
  bool want_write = false;
  bool epollout_armed = false;
  CopyEngine::Token copy_token = 0;  // the reader's payload the CopyEngine is copying
  std::uint64_t counted_rx = 0;
  std::set<std::uint64_t> shared_out;             // regions of ours the peer has mapped
  std::map<std::uint64_t, PeerRegion> shared_in;  // the peer's regions mapped here
  std::deque<int> received_fds;                   // for the kShareMemory frames to come
  EventLoop::Clock::time_point last_rx = EventLoop::Clock::now();
  EventLoop::Clock::time_point last_tx = EventLoop::Clock::now();
  const EventLoop::Clock::time_point opened = EventLoop::Clock::now();
};

}  // namespace ernic::emu
