#include "engine/engine.h"

#include <algorithm>

// The wire side of the engine: segmenting and transmitting requests, placing and
// acknowledging what peers send, NAKs, RNR retry timers and lost peers.
namespace ernic::emu {
namespace {

WcStatus status_for(NakCode code) {
  switch (code) {
    case NakCode::kRemoteAccess:
      return WcStatus::kRemoteAccessError;
    case NakCode::kInvalidRequest:
      return WcStatus::kRemoteInvalidRequest;
    default:
      return WcStatus::kRemoteOperationError;
  }
}

// Message sequence numbers wrap; compare them as a window.
bool msn_at_or_before(std::uint32_t a, std::uint32_t b) {
  return static_cast<std::int32_t>(a - b) <= 0;
}

}  // namespace

std::uint32_t Engine::segment_size_to(NodeId node) const {
  const std::uint32_t fabric_choice = fabric_.segment_size_to(node);
  return std::min(fabric_choice != 0 ? fabric_choice : config_.max_segment, kMaxFramePayload);
}

void Engine::transmit_pending(QueuePair& q) {
  if (q.rnr_retry_at) {
    return;  // paused until the RNR timer fires
  }
  const std::uint32_t segment = segment_size_to(q.remote_node);
  for (; q.next_to_transmit < q.send_queue.size(); ++q.next_to_transmit) {
    SendWqe& wqe = q.send_queue[q.next_to_transmit];
    const SendWr& wr = wqe.wr;
    FrameHeader h;
    h.dst_qpn = q.remote_qpn;
    h.src_qpn = q.qpn;
    h.msn = wqe.msn;
    h.total_length = wr.sge.length;
    if (wr.opcode == SendOpcode::kRdmaRead) {
      wqe.read_received = 0;
      h.op = FrameOp::kReadRequest;
      h.rkey = wr.rkey;
      h.remote_addr = wr.remote_addr;
      fabric_.send(q.remote_node, h, nullptr);
      continue;
    }
    const bool is_write =
        wr.opcode == SendOpcode::kRdmaWrite || wr.opcode == SendOpcode::kRdmaWriteWithImm;
    const bool has_imm =
        wr.opcode == SendOpcode::kSendWithImm || wr.opcode == SendOpcode::kRdmaWriteWithImm;
    h.op = is_write ? FrameOp::kWrite : FrameOp::kSend;
    h.rkey = is_write ? wr.rkey : 0;
    h.imm = has_imm ? wr.imm : 0;
    std::uint32_t offset = 0;
    do {
      const std::uint32_t length = std::min(segment, wr.sge.length - offset);
      h.offset = offset;
      h.payload_length = length;
      h.remote_addr = is_write ? wr.remote_addr + offset : 0;
      const bool last = offset + length == wr.sge.length;
      h.flags = static_cast<std::uint8_t>((last ? kFlagLast : 0) | (has_imm ? kFlagImmediate : 0));
      fabric_.send(q.remote_node, h, wqe.local == nullptr ? nullptr : wqe.local + offset);
      stats_.bytes_sent += length;
      q.stats.bytes_sent += length;
      if (is_write) {
        stats_.rdma_write_bytes += length;
        q.stats.bytes_rdma_write += length;
      }
      offset += length;
    } while (offset < wr.sge.length);
  }
}

void Engine::send_control(QueuePair& q, FrameOp op, std::uint32_t msn, NakCode code) {
  FrameHeader h;
  h.op = op;
  h.dst_qpn = q.remote_qpn;
  h.src_qpn = q.qpn;
  h.msn = msn;
  h.status = static_cast<std::uint16_t>(code);
  fabric_.send(q.remote_node, h, nullptr);
}

void Engine::responder_error(QueuePair& q, std::uint32_t msn, NakCode code, WcStatus local_status) {
  if (q.current_recv) {
    complete(q.recv_cq,
             {q.current_recv->wr.wr_id, local_status, WcOpcode::kRecv, q.qpn, 0, 0, false});
    q.current_recv.reset();
  }
  enter_error(q);
  ++stats_.naks_sent;
  send_control(q, FrameOp::kNak, msn, code);
}

bool Engine::take_accepted(InFlight frame) {
  auto it = std::find(accepted_in_flight_.begin(), accepted_in_flight_.end(), frame);
  if (it == accepted_in_flight_.end()) {
    return false;
  }
  *it = accepted_in_flight_.back();
  accepted_in_flight_.pop_back();
  return true;
}

Placement Engine::place(NodeId from, const FrameHeader& h) {
  take_accepted({from, h.dst_qpn});  // an earlier frame there that was never delivered
  accepted_ = false;
  const Placement placement = place_frame(from, h);
  if (accepted_) {
    accepted_in_flight_.push_back({from, h.dst_qpn});
  }
  return placement;
}

Placement Engine::place_frame(NodeId from, const FrameHeader& h) {
  auto it = qps_.find(h.dst_qpn);
  if (it == qps_.end()) {
    return {};
  }
  QueuePair& q = it->second;
  if ((q.state != QpState::kRtr && q.state != QpState::kRts) || from != q.remote_node ||
      h.src_qpn != q.remote_qpn) {
    return {};
  }
  switch (h.op) {
    case FrameOp::kSend:
    case FrameOp::kWrite:
    case FrameOp::kReadRequest:
      return place_request(q, h);
    case FrameOp::kReadResponse:
      return place_read_response(q, h);
    case FrameOp::kAck:
    case FrameOp::kNak:
      accepted_ = q.state == QpState::kRts;
      return {};
    default:
      return {};
  }
}

Placement Engine::place_request(QueuePair& q, const FrameHeader& h) {
  if (q.awaiting_retry) {
    if (h.msn != q.expected_msn || h.offset != 0) {
      return {};  // the rest of the message we refused, or messages queued behind it
    }
    q.awaiting_retry = false;
  }
  if (h.msn != q.expected_msn || h.offset != q.expected_offset) {
    return {};
  }
  if (h.op == FrameOp::kReadRequest) {
    accepted_ = true;
    return {};
  }
  if (h.offset == 0) {
    const bool needs_receive = h.op == FrameOp::kSend || (h.flags & kFlagImmediate) != 0;
    if (needs_receive) {
      if (q.recv_queue.empty() && receive_refill_) {
        receive_refill_(q.qpn);
      }
      if (q.recv_queue.empty()) {
        ++stats_.naks_sent;
        q.awaiting_retry = true;
        send_control(q, FrameOp::kNak, h.msn, NakCode::kReceiverNotReady);
        return {};
      }
      q.current_recv = q.recv_queue.front();
      q.recv_queue.pop_front();
      q.current_recv_buffer = nullptr;
      if (h.op == FrameOp::kSend) {
        const Sge& sge = q.current_recv->wr.sge;
        if (h.total_length > sge.length) {
          responder_error(q, h.msn, NakCode::kInvalidRequest, WcStatus::kLocalLengthError);
          return {};
        }
        if (sge.length > 0) {
          q.current_recv_buffer =
              translate(find_mr(sge.lkey), q.pd, sge.addr, sge.length, kAccessLocalWrite);
          if (q.current_recv_buffer == nullptr) {
            responder_error(q, h.msn, NakCode::kRemoteOperation, WcStatus::kLocalProtectionError);
            return {};
          }
        }
      }
    }
  }
  if (h.op == FrameOp::kSend) {
    if (!q.current_recv) {
      return {};
    }
    accepted_ = true;
    // offset + payload_length <= total_length <= receive length, checked above and by the decoder.
    return {h.payload_length == 0 ? nullptr : q.current_recv_buffer + h.offset};
  }
  // RDMA WRITE: every segment is checked against its own key and bounds.
  if (h.payload_length > 0) {
    std::byte* dst = nullptr;
    if ((q.access & kAccessRemoteWrite) != 0) {
      dst = translate(find_mr(h.rkey), q.pd, h.remote_addr, h.payload_length, kAccessRemoteWrite);
    }
    if (dst == nullptr) {
      responder_error(q, h.msn, NakCode::kRemoteAccess, WcStatus::kFlushError);
      return {};
    }
    accepted_ = true;
    return {dst};
  }
  accepted_ = true;
  return {};
}

Placement Engine::place_read_response(QueuePair& q, const FrameHeader& h) {
  if (q.state != QpState::kRts || q.send_queue.empty()) {
    return {};
  }
  const std::uint32_t index = h.msn - q.send_queue.front().msn;
  if (index >= q.send_queue.size()) {
    return {};
  }
  SendWqe& wqe = q.send_queue[index];
  if (wqe.wr.opcode != SendOpcode::kRdmaRead || wqe.done || h.offset != wqe.read_received ||
      h.total_length != wqe.wr.sge.length) {
    return {};
  }
  accepted_ = true;
  return {h.payload_length == 0 ? nullptr : wqe.local + h.offset};
}

void Engine::delivered(NodeId from, const FrameHeader& h) {
  if (!take_accepted({from, h.dst_qpn})) {
    return;
  }
  auto it = qps_.find(h.dst_qpn);
  if (it == qps_.end()) {
    return;
  }
  QueuePair& q = it->second;
  switch (h.op) {
    case FrameOp::kSend:
    case FrameOp::kWrite:
      on_request_segment(q, h);
      return;
    case FrameOp::kReadRequest:
      serve_read_request(q, h);
      return;
    case FrameOp::kReadResponse:
      on_read_response(q, h);
      return;
    case FrameOp::kAck:
      on_ack(q, h.msn);
      return;
    case FrameOp::kNak:
      on_nak(q, h);
      return;
    default:
      return;
  }
}

void Engine::on_request_segment(QueuePair& q, const FrameHeader& h) {
  stats_.bytes_received += h.payload_length;
  q.stats.bytes_received += h.payload_length;
  q.expected_offset += h.payload_length;
  if (h.op == FrameOp::kWrite && h.payload_length > 0 && write_observer_) {
    write_observer_(q.qpn, h.remote_addr, h.payload_length);
  }
  if (h.offset + h.payload_length < h.total_length) {
    return;
  }
  count_served_request(h.total_length);
  if (q.current_recv) {
    const bool imm = (h.flags & kFlagImmediate) != 0;
    const WcOpcode op = h.op == FrameOp::kSend ? WcOpcode::kRecv : WcOpcode::kRecvRdmaWithImm;
    complete(q.recv_cq,
             {q.current_recv->wr.wr_id, WcStatus::kSuccess, op, q.qpn,
              h.op == FrameOp::kSend ? h.total_length : h.total_length, imm ? h.imm : 0, imm});
    q.current_recv.reset();
  }
  send_control(q, FrameOp::kAck, h.msn, NakCode::kNone);
  ++q.expected_msn;
  q.expected_offset = 0;
}

void Engine::count_served_request(std::uint64_t length) {
  if (length <= kShortRequestBytes) {
    ++stats_.latency_requests;
  }
  if (length >= kStreamRequestBytes) {
    ++stats_.stream_requests;
  }
}

void Engine::serve_read_request(QueuePair& q, const FrameHeader& h) {
  count_served_request(h.total_length);
  std::byte* src = nullptr;
  if (h.total_length > 0) {
    if ((q.access & kAccessRemoteRead) != 0) {
      src = translate(find_mr(h.rkey), q.pd, h.remote_addr, h.total_length, kAccessRemoteRead);
    }
    if (src == nullptr) {
      responder_error(q, h.msn, NakCode::kRemoteAccess, WcStatus::kFlushError);
      return;
    }
  }
  FrameHeader r;
  r.op = FrameOp::kReadResponse;
  r.dst_qpn = q.remote_qpn;
  r.src_qpn = q.qpn;
  r.msn = h.msn;
  r.total_length = h.total_length;
  const std::uint32_t segment = segment_size_to(q.remote_node);
  std::uint32_t offset = 0;
  do {
    const std::uint32_t length = std::min(segment, h.total_length - offset);
    r.offset = offset;
    r.payload_length = length;
    r.flags = offset + length == h.total_length ? kFlagLast : 0;
    fabric_.send(q.remote_node, r, src == nullptr ? nullptr : src + offset);
    stats_.bytes_sent += length;
    q.stats.bytes_sent += length;
    offset += length;
  } while (offset < h.total_length);
  ++q.expected_msn;
}

void Engine::on_read_response(QueuePair& q, const FrameHeader& h) {
  SendWqe& wqe = q.send_queue[h.msn - q.send_queue.front().msn];
  wqe.read_received += h.payload_length;
  stats_.bytes_received += h.payload_length;
  stats_.rdma_read_bytes += h.payload_length;
  q.stats.bytes_received += h.payload_length;
  q.stats.bytes_rdma_read += h.payload_length;
  if (wqe.read_received == wqe.wr.sge.length) {
    wqe.done = true;
    complete_finished_sends(q);
  }
}

void Engine::on_ack(QueuePair& q, std::uint32_t msn) {
  for (SendWqe& wqe : q.send_queue) {
    if (!msn_at_or_before(wqe.msn, msn)) {
      break;
    }
    if (wqe.wr.opcode != SendOpcode::kRdmaRead) {
      wqe.done = true;
    }
  }
  complete_finished_sends(q);
}

void Engine::on_nak(QueuePair& q, const FrameHeader& h) {
  if (q.send_queue.empty() || q.send_queue.front().msn != h.msn) {
    return;  // not about the oldest outstanding message: stale
  }
  const auto code = static_cast<NakCode>(h.status);
  if (code != NakCode::kReceiverNotReady) {
    fail_head(q, status_for(code));
    return;
  }
  if (q.rnr_retry != 7 && q.rnr_retries_used >= q.rnr_retry) {
    fail_head(q, WcStatus::kRnrRetryExceeded);
    return;
  }
  ++q.rnr_retries_used;
  ++stats_.rnr_retries;
  q.rnr_retry_at = clock_() + q.rnr_delay;
  // Everything sent after the refused message will be discarded by the responder: stop it
  // from going out at all (an 8 MiB pipeline would otherwise cross the wire for nothing).
  fabric_.cancel(q.remote_node, q.qpn, true);
}

void Engine::advance_timers() {
  const auto now = clock_();
  for (auto& [qpn, q] : qps_) {
    if (q.rnr_retry_at && *q.rnr_retry_at <= now) {
      q.rnr_retry_at.reset();
      if (q.state != QpState::kRts) {
        continue;
      }
      if (!fabric_.reachable(q.remote_node)) {
        fail_head(q, WcStatus::kRetryExceeded);
        continue;
      }
      q.next_to_transmit = 0;  // go back to the refused message and resend from there
      transmit_pending(q);
    }
  }
}

std::optional<Clock::time_point> Engine::next_deadline() const {
  std::optional<Clock::time_point> earliest;
  for (const auto& [qpn, q] : qps_) {
    if (q.rnr_retry_at && (!earliest || *q.rnr_retry_at < *earliest)) {
      earliest = q.rnr_retry_at;
    }
  }
  return earliest;
}

void Engine::peer_lost(NodeId node) {
  std::erase_if(accepted_in_flight_, [node](const InFlight& f) { return f.from == node; });
  for (auto& [qpn, q] : qps_) {
    if (q.remote_node == node && (q.state == QpState::kRtr || q.state == QpState::kRts)) {
      fail_head(q, WcStatus::kRetryExceeded);
    }
  }
}

}  // namespace ernic::emu
