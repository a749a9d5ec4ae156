// The extra data lanes between two nodes: more TCP connections to the same peer, opened by the
// side that dialed the first one and authenticated like it. Each QP's frames to a peer take one
// lane, chosen when it first sends there, so its order holds; different QPs take different
// lanes (round robin). One connection for everything made a latency test beside a bulk one
// wait behind the megabytes of bulk bytes in the kernel's socket buffers, which the mesh's own
// interleaving cannot reach (docs/emulator.md, "Several tenants").

#include <algorithm>
#include <string>

#include "mesh/mesh_connection.h"

namespace ernic::emu {

void MeshFabric::open_lanes(const Connection& primary) {
  if (shut_down_ || primary.lane != 0 || node_id_ == kUnassignedNode) {
    return;
  }
  for (std::uint32_t lane = 1; lane <= config_.extra_lanes; ++lane) {
    dial(primary.dial_host, primary.dial_port, primary.peer, false, lane);
  }
}

std::string MeshFabric::refuse_lane(const Connection& c) const {
  if (c.claimed_peer == kUnassignedNode || c.claimed_peer == node_id_) {
    return "a lane must come from another node with an id";
  }
  auto it = peers_.find(c.claimed_peer);
  if (it == peers_.end() || it->second->phase != Connection::Phase::kEstablished) {
    return fmt::format("lane {} of node {}, which is not connected", c.lane, c.claimed_peer);
  }
  auto lanes = lanes_.find(c.claimed_peer);
  if (c.lane > config_.extra_lanes ||
      (lanes != lanes_.end() && lanes->second.size() >= config_.extra_lanes)) {
    return fmt::format("node {} has all its {} lanes", c.claimed_peer, config_.extra_lanes);
  }
  return {};
}

void MeshFabric::add_lane(Connection& c) {
  lanes_[c.peer].push_back(&c);
  ++stats_.lanes;
  stats_.local_lanes += c.local ? 1 : 0;
  log_.debug("mesh: lane {} to node {} open ({})", c.lane, c.peer, c.label);
}

MeshFabric::Connection* MeshFabric::data_connection(NodeId to, std::uint32_t qpn, bool assign) {
  auto primary = peers_.find(to);
  if (primary == peers_.end()) {
    return nullptr;
  }
  const auto lanes = lanes_.find(to);
  const std::size_t extra = lanes == lanes_.end() ? 0 : lanes->second.size();
  const auto key = std::pair{to, qpn};
  auto assigned = qp_lanes_.find(key);
  if (assigned == qp_lanes_.end()) {
    if (!assign) {
      return nullptr;
    }
    // Data keeps off the primary while there are lanes: it carries the heartbeats and the
    // topology, and a co-located peer's lanes are local sockets where its primary may be TCP
    // (the registration's).
    const std::uint32_t chosen = extra == 0 ? 0 : 1 + next_lane_[to]++ % extra;
    assigned = qp_lanes_.emplace(key, chosen).first;
  }
  // Lanes leave the list only when the peer goes (its assignments with it): an index holds.
  const std::uint32_t lane = assigned->second;
  return lane == 0 || lane > extra ? primary->second : lanes->second[lane - 1];
}

void MeshFabric::close_lanes(NodeId peer) {
  std::erase_if(qp_lanes_, [peer](const auto& entry) { return entry.first.first == peer; });
  next_lane_.erase(peer);
  auto lanes = lanes_.extract(peer);
  if (lanes.empty()) {
    return;
  }
  for (Connection* lane : lanes.mapped()) {
    --stats_.lanes;
    stats_.local_lanes -= lane->local ? 1 : 0;
    lane->peer = kUnassignedNode;  // already out of lanes_: closing it must not look again
    close_connection(*lane, "", false);
  }
}

void MeshFabric::close_lane(Connection& c, const std::string& reason, bool lost,
                            bool was_established) {
  const NodeId peer = c.peer;
  bool listed = false;
  if (auto lanes = lanes_.find(peer); lanes != lanes_.end()) {
    listed = std::erase(lanes->second, &c) > 0;
    if (listed) {
      --stats_.lanes;
      stats_.local_lanes -= c.local ? 1 : 0;
    }
  }
  auto node = connections_.extract(c.fd);
  if (!node.empty()) {
    closed_.push_back(std::move(node.mapped()));
  }
  // Frames of a QP on this lane are gone with it: the peer is lost as a whole, as when its one
  // connection failed, and for the same reason.
  auto primary = peers_.find(peer);
  if (listed && was_established && lost && !shut_down_ && primary != peers_.end()) {
    close_connection(*primary->second,
                     fmt::format("{} on lane {}", reason.empty() ? "closed" : reason, c.lane));
  } else if (!reason.empty()) {
    log_.warn("mesh: {}", reason);
  }
}

}  // namespace ernic::emu
