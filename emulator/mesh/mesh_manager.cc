// The manager protocol: node registration, topology distribution (the lower id dials), the
// count of established peers, and heartbeats that watch liveness.

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "mesh/mesh_connection.h"

namespace ernic::emu {
namespace {

void write_node(ByteWriter& w, const MeshNode& n) {
  w.u32(n.id);
  w.str(n.host);
  w.u16(n.port);
  w.str(n.mac);
  w.u16(static_cast<std::uint16_t>(n.gids.size()));
  for (const auto& gid : n.gids) {
    w.str(gid);
  }
}

MeshNode read_node(ByteReader& r) {
  MeshNode n;
  n.id = r.u32();
  n.host = r.str();
  n.port = r.u16();
  n.mac = r.str();
  const std::uint16_t count = r.u16();
  for (std::uint16_t i = 0; i < count && !r.failed(); ++i) {
    n.gids.push_back(r.str());
  }
  return n;
}

}  // namespace

bool MeshFabric::Connection::on_manager_frame(FrameOp op, ByteReader& r) {
  if (op == FrameOp::kRegister && mesh.config_.role == MeshConfig::Role::kManager &&
      peer == kUnassignedNode) {
    MeshNode node = read_node(r);
    if (r.failed()) {
      mesh.reject(*this, "malformed registration");
      return false;
    }
    for (const auto& gid : node.gids) {
      auto owner = mesh.gid_to_node_.find(gid);
      if (owner != mesh.gid_to_node_.end()) {
        mesh.reject(*this, fmt::format("GID {} already belongs to node {}", gid, owner->second));
        return false;
      }
    }
    node.id = mesh.next_node_id_++;
    if (node.host.empty() || node.host == "0.0.0.0") {
      node.host = label.substr(0, label.rfind(':'));
    }
    peer = node.id;
    mesh.peers_[node.id] = this;
    mesh.count_peer(*this);
    mesh.log_.info("mesh: worker {} registered from {} (GIDs: {})", node.id, label,
                   fmt::join(node.gids, ","));
    mesh.nodes_.push_back(node);
    for (const auto& gid : node.gids) {
      mesh.gid_to_node_[gid] = node.id;
    }
    ByteWriter w;
    w.u32(node.id);
    mesh.send_control(*this, static_cast<std::uint8_t>(FrameOp::kWelcome), w.bytes());
    mesh.broadcast_topology();
    return true;
  }
  if (op == FrameOp::kWelcome && registering) {
    mesh.node_id_ = r.u32();
    mesh.log_.info("mesh: registered with the manager at {} as node {}", label, mesh.node_id_);
    mesh.open_lanes(*this);
    return true;
  }
  if (op == FrameOp::kTopology && registering) {
    std::vector<MeshNode> nodes;
    const std::uint16_t count = r.u16();
    for (std::uint16_t i = 0; i < count && !r.failed(); ++i) {
      nodes.push_back(read_node(r));
    }
    if (r.failed()) {
      mesh.close_connection(*this, "malformed topology from the manager");
      return false;
    }
    mesh.apply_topology(std::move(nodes));
    return true;
  }
  mesh.close_connection(*this, fmt::format("unexpected control frame 0x{:02x} from {}",
                                           static_cast<unsigned>(op), label));
  return false;
}

void MeshFabric::Connection::send_registration() {
  ByteWriter reg;
  write_node(reg, {kUnassignedNode, mesh.config_.bind, mesh.listen_port_, mesh.config_.mac,
                   mesh.config_.gids});
  mesh.send_control(*this, static_cast<std::uint8_t>(FrameOp::kRegister), reg.bytes());
}

void MeshFabric::broadcast_topology() {
  ByteWriter w;
  w.u16(static_cast<std::uint16_t>(nodes_.size()));
  for (const auto& n : nodes_) {
    write_node(w, n);
  }
  // A failed write closes its connection and edits peers_ (and may broadcast again).
  std::vector<Connection*> targets;
  for (auto& [id, c] : peers_) {
    if (c->phase == Connection::Phase::kEstablished) {
      targets.push_back(c);
    }
  }
  for (Connection* c : targets) {
    if (c->phase == Connection::Phase::kEstablished) {
      send_control(*c, static_cast<std::uint8_t>(FrameOp::kTopology), w.bytes());
      write_some(*c);
    }
  }
}

void MeshFabric::apply_topology(std::vector<MeshNode> nodes) {
  std::vector<NodeId> gone;
  for (const auto& [id, c] : peers_) {
    if (std::none_of(nodes.begin(), nodes.end(),
                     [id = id](const MeshNode& n) { return n.id == id; })) {
      gone.push_back(id);
    }
  }
  for (NodeId id : gone) {
    if (auto it = peers_.find(id); it != peers_.end()) {
      close_connection(*it->second, fmt::format("node {} left the mesh", id));
    }
  }
  nodes_ = std::move(nodes);
  gid_to_node_.clear();
  for (const auto& n : nodes_) {
    for (const auto& gid : n.gids) {
      gid_to_node_[gid] = n.id;
    }
    if (n.id > node_id_ && node_id_ != kUnassignedNode && !peers_.contains(n.id)) {
      dial(n.host, n.port, n.id, false);  // the lower id dials
    }
  }
  if (!ready_ && node_id_ != kUnassignedNode) {
    ready_ = true;
    on_ready_();
  }
}

void MeshFabric::count_peer(Connection& c) {
  if (c.counted) {
    return;
  }
  c.counted = true;
  ++stats_.peers;
  if (on_peers_changed_) {
    on_peers_changed_();
  }
}

void MeshFabric::heartbeat() {
  if (shut_down_) {
    return;
  }
  const auto now = EventLoop::Clock::now();
  const auto late = now - last_heartbeat_ - config_.heartbeat_interval;
  last_heartbeat_ = now;
  loop_.add_timer(now + config_.heartbeat_interval, [this] { heartbeat(); });
  // Writes below may close connections, which edits connections_: work on a copy.
  std::vector<Connection*> established;
  for (auto& [fd, c] : connections_) {
    if (c->phase == Connection::Phase::kEstablished) {
      established.push_back(c.get());
    }
  }
  if (late > config_.heartbeat_timeout / 2) {
    // This instance itself was frozen (SIGSTOP, a stalled VM): its peers' silence is its own.
    // They get a full timeout from now; a peer that gave up on us meanwhile has closed the
    // connection, which the next read sees.
    log_.warn("mesh: this instance was frozen for {} ms; checking its peers afresh",
              std::chrono::duration_cast<std::chrono::milliseconds>(late).count());
    for (Connection* c : established) {
      c->last_rx = now;
    }
  }
  for (Connection* c : established) {
    if (c->phase != Connection::Phase::kEstablished) {
      continue;
    }
    if (now - c->last_rx > config_.heartbeat_timeout) {
      close_connection(
          *c, "no heartbeat for " + std::to_string(config_.heartbeat_timeout.count()) + " ms");
    } else if (now - c->last_tx >= config_.heartbeat_interval && c->control_queue.empty()) {
      send_control(*c, static_cast<std::uint8_t>(FrameOp::kHeartbeat), {});
      write_some(*c);
    }
  }
  expire_handshakes(now);
}

}  // namespace ernic::emu
