#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "engine/fabric.h"

namespace ernic::emu {

// Joins engines of one process: the `loopback` backend (one engine talking to itself) and the
// engine unit tests (several engines, with peers that can be made to vanish). Frames are queued
// and delivered by deliver(), never from inside send(), so the engine is not re-entered.
class LocalHub {
 public:
  // A port is one engine's view of the hub.
  class Port final : public Fabric {
   public:
    Port(LocalHub& hub, NodeId node) : hub_(hub), node_(node) {}
    NodeId local_node() const override { return node_; }
    std::optional<NodeId> resolve_gid(std::string_view gid) const override;
    bool reachable(NodeId node) const override;
    void send(NodeId to, const FrameHeader& header, const std::byte* payload) override;
    void cancel(NodeId to, std::uint32_t src_qpn, bool requests_only) override;
    void release_memory(const std::byte* base, std::size_t length) override;
    std::uint32_t segment_size_to(NodeId node) const override;

   private:
    LocalHub& hub_;
    NodeId node_;
  };

  // Adds a node; its engine is attached afterwards (the engine needs the port to exist first).
  Port& add_node(NodeId node, std::vector<std::string> gids);
  void attach(NodeId node, FabricReceiver& receiver);
  // Delivers queued frames (also those queued while delivering) until none is left or
  // `max_frames` were delivered. Returns how many were delivered.
  std::size_t deliver(std::size_t max_frames = SIZE_MAX);
  bool idle() const { return queue_.empty(); }
  // The node vanishes: its queued frames are dropped and every other node is told.
  void disconnect(NodeId node);
  std::uint64_t frames_delivered() const { return frames_delivered_; }
  // What segment_size_to() says from `from` to `to` (0, the engine's own, unless set): lets a
  // test stand in for a fabric that prefers other segments towards some peers.
  void prefer_segments(NodeId from, NodeId to, std::uint32_t size) {
    segment_sizes_[{from, to}] = size;
  }
  // The payload lengths of the data frames delivered so far, in order.
  const std::vector<std::uint32_t>& data_frame_lengths() const { return data_frame_lengths_; }

 private:
  struct QueuedFrame {
    NodeId from;
    NodeId to;
    FrameHeader header;
    const std::byte* payload;
  };
  struct Node {
    std::unique_ptr<Port> port;
    FabricReceiver* receiver = nullptr;
    std::vector<std::string> gids;
    bool alive = true;
  };
  std::map<NodeId, Node> nodes_;
  std::deque<QueuedFrame> queue_;
  std::uint64_t frames_delivered_ = 0;
  std::map<std::pair<NodeId, NodeId>, std::uint32_t> segment_sizes_;
  std::vector<std::uint32_t> data_frame_lengths_;
};

}  // namespace ernic::emu
