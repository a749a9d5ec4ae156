#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "engine/wire.h"

namespace ernic::emu {
// A frame cancel() may drop: data, or (requests_only) a request of the QP's requester side.
inline bool cancellable(const FrameHeader& h, bool requests_only) {
  if (h.op == FrameOp::kAck || h.op == FrameOp::kNak) {
    return false;
  }
  return !requests_only || h.op != FrameOp::kReadResponse;
}
}  // namespace ernic::emu

namespace ernic::emu {

using NodeId = std::uint32_t;

// What the engine answers when a data frame's header arrives: where its payload goes.
// destination == nullptr means "discard the payload" (the fabric reads it into scratch space).
// A non-null destination is always payload_length bytes inside a registered region.
struct Placement {
  std::byte* destination = nullptr;
};

// Implemented by the engine: the fabric hands it frames and tells it when a peer is gone.
class FabricReceiver {
 public:
  virtual ~FabricReceiver() = default;
  virtual Placement place(NodeId from, const FrameHeader& header) = 0;
  // The payload is in place (or discarded); act on the frame.
  virtual void delivered(NodeId from, const FrameHeader& header) = 0;
  virtual void peer_lost(NodeId node) = 0;
};

// How the engine reaches other engines. It never sees sockets.
class Fabric {
 public:
  virtual ~Fabric() = default;
  virtual NodeId local_node() const = 0;
  virtual std::optional<NodeId> resolve_gid(std::string_view gid) const = 0;
  virtual bool reachable(NodeId node) const = 0;
  // Queues a frame. `payload` (header.payload_length bytes) must stay valid until the frame is
  // written or cancel() drops it; it is written straight from that memory. Frames of one
  // source QP keep their order; frames of different QPs interleave.
  virtual void send(NodeId to, const FrameHeader& header, const std::byte* payload) = 0;
  // Drops the not-yet-started data frames queued by one QP: all of them when it went to the
  // error state, only its requests (SEND, WRITE, READ request) when it rewinds after an RNR
  // NAK. ACKs and NAKs it already generated still go out.
  virtual void cancel(NodeId to, std::uint32_t src_qpn, bool requests_only = false) = 0;
  // The segment size to use towards `node` instead of the engine's own, or 0. A segment's size
  // bounds what a frame of another QP waits behind on a wire; a fabric that carries payloads
  // to `node` without a wire (by reference) is better served by fewer, larger ones.
  virtual std::uint32_t segment_size_to(NodeId node) const {
    (void)node;
    return 0;
  }
  // [base, base + length) is about to be unmapped (its client went away, its QPs are already
  // destroyed): no frame may be written from it or read into it afterwards. A frame already
  // partly on the wire is finished from a copy; a payload being received goes to scratch space.
  virtual void release_memory(const std::byte* base, std::size_t length) = 0;
};

}  // namespace ernic::emu
