#include "engine/local_fabric.h"

#include <algorithm>
#include <cstring>

namespace ernic::emu {

std::optional<NodeId> LocalHub::Port::resolve_gid(std::string_view gid) const {
  for (const auto& [id, node] : hub_.nodes_) {
    if (node.alive && std::find(node.gids.begin(), node.gids.end(), gid) != node.gids.end()) {
      return id;
    }
  }
  return std::nullopt;
}

bool LocalHub::Port::reachable(NodeId node) const {
  auto it = hub_.nodes_.find(node);
  return it != hub_.nodes_.end() && it->second.alive && hub_.nodes_.at(node_).alive;
}

void LocalHub::Port::send(NodeId to, const FrameHeader& header, const std::byte* payload) {
  if (!reachable(to)) {
    return;
  }
  hub_.queue_.push_back({node_, to, header, payload});
}

std::uint32_t LocalHub::Port::segment_size_to(NodeId node) const {
  const auto it = hub_.segment_sizes_.find({node_, node});
  return it == hub_.segment_sizes_.end() ? 0 : it->second;
}

void LocalHub::Port::cancel(NodeId to, std::uint32_t src_qpn, bool requests_only) {
  std::erase_if(hub_.queue_, [&](const QueuedFrame& f) {
    return f.from == node_ && f.to == to && f.header.src_qpn == src_qpn &&
           cancellable(f.header, requests_only);
  });
}

void LocalHub::Port::release_memory(const std::byte* base, std::size_t length) {
  // Frames are delivered whole, so none is half-read: drop the ones whose payload would go.
  std::erase_if(hub_.queue_, [&](const QueuedFrame& f) {
    return f.payload != nullptr && f.payload < base + length &&
           f.payload + f.header.payload_length > base;
  });
}

LocalHub::Port& LocalHub::add_node(NodeId node, std::vector<std::string> gids) {
  Node& n = nodes_[node];
  n.port = std::make_unique<Port>(*this, node);
  n.gids = std::move(gids);
  return *n.port;
}

void LocalHub::attach(NodeId node, FabricReceiver& receiver) {
  nodes_.at(node).receiver = &receiver;
}

std::size_t LocalHub::deliver(std::size_t max_frames) {
  std::size_t delivered = 0;
  while (!queue_.empty() && delivered < max_frames) {
    const QueuedFrame frame = queue_.front();
    queue_.pop_front();
    Node& target = nodes_.at(frame.to);
    if (!target.alive || target.receiver == nullptr) {
      continue;
    }
    const Placement placement = target.receiver->place(frame.from, frame.header);
    if (placement.destination != nullptr && frame.payload != nullptr) {
      std::memmove(placement.destination, frame.payload, frame.header.payload_length);
    }
    target.receiver->delivered(frame.from, frame.header);
    if (frame.header.op == FrameOp::kWrite || frame.header.op == FrameOp::kSend ||
        frame.header.op == FrameOp::kReadResponse) {
      data_frame_lengths_.push_back(frame.header.payload_length);
    }
    ++delivered;
    ++frames_delivered_;
  }
  return delivered;
}

void LocalHub::disconnect(NodeId node) {
  nodes_.at(node).alive = false;
  std::erase_if(queue_, [&](const QueuedFrame& f) { return f.from == node || f.to == node; });
  for (auto& [id, n] : nodes_) {
    if (id != node && n.alive && n.receiver != nullptr) {
      n.receiver->peer_lost(node);
    }
  }
}

}  // namespace ernic::emu
