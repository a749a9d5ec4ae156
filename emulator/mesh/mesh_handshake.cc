// The mesh handshake: accepting connections within the bound on unauthenticated ones, the
// versioned, token-authenticated hello/challenge/authenticate exchange, and its time limit.

#include <arpa/inet.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "mesh/mesh_connection.h"

namespace ernic::emu {
namespace {

constexpr std::string_view kHandshakeMagic = "ERNIC-MESH";
// Bit 0: segmented data frames. Bit 1: takes payloads by reference on a local connection
// (kShareMemory, kForgetMemory, kFlagByReference: mesh_shared_memory.cc); a node without it
// gets every payload on the wire.
// Bit 2: says with kCopied how much of what it got by reference it has placed, so that a peer
// may bound what it sends by reference ahead of that.
constexpr std::uint32_t kSegmentedFrames = 1;
constexpr std::uint32_t kTakesReferences = 2;
constexpr std::uint32_t kAcknowledgesCopies = 4;
// Bit 3: reads what a local connection's peer sends after kRing from the ring that came with it.
constexpr std::uint32_t kReadsRings = 8;

std::uint32_t our_capabilities(const MeshConfig& config) {
  return kSegmentedFrames |
         (config.payloads_by_reference ? kTakesReferences | kAcknowledgesCopies : 0) |
         (config.local_rings ? kReadsRings : 0);
}
// Bits 8-15 of the hello's capabilities: which lane of its node a connection is (0: the
// primary). A node that does not know lanes sends 0 and dials none.
constexpr int kLaneShift = 8;
constexpr std::uint32_t kLaneMask = 0xff;

}  // namespace

void MeshFabric::accept_connection(int fd, bool local, std::string label) {
  if (unauthenticated_ >= config_.max_unauthenticated) {
    close(fd);
    ++stats_.refused_peers;
    if (!refusing_unauthenticated_) {
      refusing_unauthenticated_ = true;
      log_.warn("mesh: {} connections are still in the handshake: refusing new ones (first: {})",
                unauthenticated_, label);
    }
    return;
  }
  auto conn = std::make_unique<Connection>(*this, fd, false, local);
  conn->label = std::move(label);
  conn->phase = Connection::Phase::kAwaitHello;
  conn->in_handshake = true;
  ++unauthenticated_;
  Connection& c = *conn;
  connections_[fd] = std::move(conn);
  loop_.add_fd(fd, EPOLLIN, [this, &c](std::uint32_t events) { on_events(c, events); });
  log_.debug("mesh: accepted a connection from {}", c.label);
}

void MeshFabric::leave_handshake(Connection& c) {
  if (!c.in_handshake) {
    return;
  }
  c.in_handshake = false;
  --unauthenticated_;
  if (unauthenticated_ < config_.max_unauthenticated) {
    refusing_unauthenticated_ = false;
  }
}

void MeshFabric::on_connected(Connection& c) {
  c.phase = Connection::Phase::kAwaitChallenge;
  loop_.modify_fd(c.fd, EPOLLIN);
  ByteWriter w;
  w.str(std::string(kHandshakeMagic));
  w.u16(config_.version_major);
  w.u16(config_.version_minor);
  w.u32(c.registering ? kUnassignedNode : node_id_);
  w.u32(our_capabilities(config_) | (c.lane << kLaneShift));
  w.raw(c.my_nonce);
  send_control(c, static_cast<std::uint8_t>(FrameOp::kHello), w.bytes());
  write_some(c);
}

void MeshFabric::reject(Connection& c, const std::string& reason) {
  ++stats_.refused_peers;
  log_.warn("mesh: refused {}: {}", c.label, reason);
  ByteWriter w;
  w.str(reason);
  send_control(c, static_cast<std::uint8_t>(FrameOp::kReject), w.bytes());
  c.close_after_flush = true;
  write_some(c);
}

bool MeshFabric::on_control(Connection& c, const FrameHeader& h, std::span<const std::byte> body) {
  if (c.phase == Connection::Phase::kClosed || c.close_after_flush) {
    return false;
  }
  ByteReader r(body);
  const auto op = h.op;
  if (op == FrameOp::kReject) {
    const std::string reason = r.str();
    if (c.registering && !ready_) {
      close_connection(c, "", false);
      on_fatal_(fmt::format("mesh: manager {} refused us: {}", c.label, reason));
    } else {
      close_connection(c, fmt::format("{} refused us: {}", c.label, reason));
    }
    return false;
  }
  if ((op == FrameOp::kShareMemory || op == FrameOp::kForgetMemory || op == FrameOp::kCopied) &&
      c.phase == Connection::Phase::kEstablished) {
    return on_shared_memory_frame(c, op, r);
  }
  if (op == FrameOp::kRing && c.phase == Connection::Phase::kEstablished) {
    return on_ring_frame(c, r);
  }
  if (op == FrameOp::kHeartbeat && c.phase == Connection::Phase::kEstablished) {
    if (c.lane > 0 && c.dialer && !c.lane_confirmed) {
      c.lane_confirmed = true;  // the acceptor took the lane: frames may go on it now
      add_lane(c);
    }
    return true;
  }
  switch (c.phase) {
    case Connection::Phase::kAwaitHello:
      if (op != FrameOp::kHello) {
        reject(c, "expected a handshake");
        return false;
      }
      return c.on_hello(r);
    case Connection::Phase::kAwaitAuth:
      return c.on_authenticate(op, r);
    case Connection::Phase::kAwaitChallenge:
      return c.on_challenge(op, r);
    case Connection::Phase::kEstablished:
      return c.on_manager_frame(op, r);
    default:
      return false;
  }
}

bool MeshFabric::Connection::on_hello(ByteReader& r) {
  const std::string magic = r.str();
  const std::uint16_t major = r.u16();
  const std::uint16_t minor = r.u16();
  const NodeId node = r.u32();
  const std::uint32_t capabilities = r.u32();
  lane = (capabilities >> kLaneShift) & kLaneMask;
  peer_takes_references = (capabilities & kTakesReferences) != 0;
  peer_acknowledges_copies = (capabilities & kAcknowledgesCopies) != 0;
  peer_reads_rings = (capabilities & kReadsRings) != 0;
  r.bytes(peer_nonce);
  if (r.failed() || magic != kHandshakeMagic) {
    mesh.reject(*this, "not an ERNIC mesh handshake");
    return false;
  }
  if (major != mesh.config_.version_major) {
    mesh.reject(*this,
                fmt::format("mesh protocol version {}.{} is not supported (this node speaks {}.{})",
                            major, minor, mesh.config_.version_major, mesh.config_.version_minor));
    return false;
  }
  if (node == kUnassignedNode && mesh.config_.role != MeshConfig::Role::kManager) {
    mesh.reject(*this, "registration must go to the manager");
    return false;
  }
  claimed_peer = node;
  if (lane > 0) {
    label += fmt::format(" (lane {})", lane);
  }
  ByteWriter w;
  w.u16(mesh.config_.version_major);
  w.u16(mesh.config_.version_minor);
  w.u32(mesh.node_id_);
  w.u32(our_capabilities(mesh.config_));
  w.raw(my_nonce);
  w.raw(make_proof(mesh.config_.token, "acceptor", peer_nonce, my_nonce));
  mesh.send_control(*this, static_cast<std::uint8_t>(FrameOp::kChallenge), w.bytes());
  phase = Phase::kAwaitAuth;
  return true;
}

bool MeshFabric::Connection::on_authenticate(FrameOp op, ByteReader& r) {
  Proof proof{};
  r.bytes(proof);
  if (op != FrameOp::kAuthenticate || r.failed() ||
      !proofs_equal(proof, make_proof(mesh.config_.token, "dialer", my_nonce, peer_nonce))) {
    mesh.reject(*this, "authentication failed: the mesh token does not match");
    return false;
  }
  if (lane > 0) {
    if (const std::string why = mesh.refuse_lane(*this); !why.empty()) {
      mesh.reject(*this, why);
      return false;
    }
    phase = Phase::kEstablished;
    mesh.leave_handshake(*this);
    peer = claimed_peer;
    lane_confirmed = true;
    mesh.add_lane(*this);
    // Tells the dialer its lane was taken; a refused one it never uses (frames sent on it
    // would be lost with it).
    mesh.send_control(*this, static_cast<std::uint8_t>(FrameOp::kHeartbeat), {});
    mesh.write_some(*this);
    return true;
  }
  if (const std::string why = mesh.refuse_claim(*this); !why.empty()) {
    mesh.reject(*this, why);
    return false;
  }
  phase = Phase::kEstablished;
  mesh.leave_handshake(*this);
  if (claimed_peer != kUnassignedNode) {
    peer = claimed_peer;
    mesh.peers_[peer] = this;
    mesh.count_peer(*this);
    mesh.log_.info("mesh: node {} connected from {}", peer, label);
  }
  return true;
}

bool MeshFabric::Connection::on_challenge(FrameOp op, ByteReader& r) {
  if (op != FrameOp::kChallenge) {
    mesh.close_connection(*this, fmt::format("{} broke the handshake", label));
    return false;
  }
  const std::uint16_t major = r.u16();
  const std::uint16_t minor = r.u16();
  const NodeId node = r.u32();
  const std::uint32_t capabilities = r.u32();
  peer_takes_references = (capabilities & kTakesReferences) != 0;
  peer_acknowledges_copies = (capabilities & kAcknowledgesCopies) != 0;
  peer_reads_rings = (capabilities & kReadsRings) != 0;
  r.bytes(peer_nonce);
  Proof proof{};
  r.bytes(proof);
  if (r.failed() || major != mesh.config_.version_major) {
    const std::string why =
        fmt::format("{} speaks mesh protocol {}.{}, this node {}.{}", label, major, minor,
                    mesh.config_.version_major, mesh.config_.version_minor);
    mesh.close_connection(*this, why, !registering);
    if (registering) {
      mesh.on_fatal_("mesh: " + why);
    }
    return false;
  }
  if (!proofs_equal(proof, make_proof(mesh.config_.token, "acceptor", my_nonce, peer_nonce))) {
    const std::string why =
        fmt::format("{} failed to prove the mesh token: the tokens differ", label);
    mesh.close_connection(*this, why, !registering);
    if (registering) {
      mesh.on_fatal_("mesh: " + why);
    }
    return false;
  }
  if (!registering && node != kUnassignedNode && node != peer) {
    mesh.close_connection(*this,
                          fmt::format("dialed node {} at {}, found node {}", peer, label, node));
    return false;
  }
  ByteWriter w;
  w.raw(make_proof(mesh.config_.token, "dialer", peer_nonce, my_nonce));
  mesh.send_control(*this, static_cast<std::uint8_t>(FrameOp::kAuthenticate), w.bytes());
  phase = Phase::kEstablished;
  if (lane > 0) {
    mesh.write_some(*this);  // joins the lanes when the acceptor's first heartbeat comes
    return true;
  }
  if (registering) {
    send_registration();
    mesh.peers_[0] = this;
  } else {
    // The peer is the node the topology named (dial() set it), not the id in its challenge: a
    // worker can accept before it has read its own id (the manager's reply to its registration
    // still in its socket) while the topology naming it already reached this node. Taking the
    // id from the challenge then made this connection drop every frame of that peer.
    mesh.log_.info("mesh: connected to node {} at {}", peer, label);
  }
  mesh.count_peer(*this);
  mesh.write_some(*this);
  if (!registering) {
    mesh.open_lanes(*this);  // the manager's lanes wait for this node's id (kWelcome)
  }
  return true;
}

std::string MeshFabric::refuse_claim(const Connection& c) const {
  if (c.claimed_peer == kUnassignedNode) {
    return {};
  }
  if (c.claimed_peer == node_id_) {
    return fmt::format("node {} is this node", c.claimed_peer);
  }
  auto it = peers_.find(c.claimed_peer);
  if (it != peers_.end() && it->second != &c && it->second->phase != Connection::Phase::kClosed) {
    // The id stays bound to the connection that registered it: a second claim is refused.
    return fmt::format("node {} is already connected from {}", c.claimed_peer, it->second->label);
  }
  return {};
}

void MeshFabric::expire_handshakes(EventLoop::Clock::time_point now) {
  std::vector<Connection*> slow;
  for (auto& [fd, c] : connections_) {
    if (c->phase != Connection::Phase::kEstablished && c->phase != Connection::Phase::kClosed &&
        now - c->opened > config_.handshake_timeout) {
      slow.push_back(c.get());
    }
  }
  for (Connection* c : slow) {
    ++stats_.refused_peers;
    close_connection(*c, fmt::format("{} did not complete the handshake within {} ms", c->label,
                                     config_.handshake_timeout.count()));
  }
}

}  // namespace ernic::emu
