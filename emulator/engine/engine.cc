#include "engine/engine.h"

#include <algorithm>
#include <random>

#include <fmt/format.h>

namespace ernic::emu {

const char* to_string(WcStatus status) {
  switch (status) {
    case WcStatus::kSuccess:
      return "success";
    case WcStatus::kLocalLengthError:
      return "local length error";
    case WcStatus::kLocalProtectionError:
      return "local protection error";
    case WcStatus::kFlushError:
      return "work request flushed error";
    case WcStatus::kRemoteAccessError:
      return "remote access error";
    case WcStatus::kRemoteInvalidRequest:
      return "remote invalid request error";
    case WcStatus::kRemoteOperationError:
      return "remote operation error";
    case WcStatus::kRetryExceeded:
      return "transport retry counter exceeded";
    case WcStatus::kRnrRetryExceeded:
      return "RNR retry counter exceeded";
  }
  return "unknown status";
}

const char* to_string(QpState state) {
  switch (state) {
    case QpState::kReset:
      return "RESET";
    case QpState::kInit:
      return "INIT";
    case QpState::kRtr:
      return "RTR";
    case QpState::kRts:
      return "RTS";
    case QpState::kError:
      return "ERR";
  }
  return "?";
}

namespace {

WcOpcode completion_opcode(SendOpcode op) {
  switch (op) {
    case SendOpcode::kSend:
    case SendOpcode::kSendWithImm:
      return WcOpcode::kSend;
    case SendOpcode::kRdmaWrite:
    case SendOpcode::kRdmaWriteWithImm:
      return WcOpcode::kRdmaWrite;
    case SendOpcode::kRdmaRead:
      return WcOpcode::kRdmaRead;
  }
  return WcOpcode::kSend;
}

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

Engine::Engine(Fabric& fabric, EngineConfig config, std::function<Clock::time_point()> clock)
    : fabric_(fabric), config_(config), clock_(std::move(clock)) {
  // Keys start at a random point so that a key from an earlier instance is not valid here.
  std::random_device random;
  next_key_ = (random() & 0xffff00u) | 0x100u;
  if (config_.max_segment == 0) {
    config_.max_segment = 1u << 20;
  }
}

Engine::~Engine() = default;

Engine::Handle Engine::alloc_pd() {
  const Handle pd = next_handle_++;
  pds_[pd] = 0;
  return pd;
}

void Engine::dealloc_pd(Handle pd) {
  auto it = pds_.find(pd);
  if (it == pds_.end()) {
    throw VerbsError(fmt::format("unknown protection domain {}", pd));
  }
  if (it->second != 0) {
    throw VerbsError(fmt::format("protection domain {} still has {} users", pd, it->second));
  }
  pds_.erase(it);
}

MemoryKeys Engine::reg_mr(Handle pd, std::byte* host, std::uint64_t iova, std::uint64_t length,
                          std::uint32_t access) {
  auto pd_it = pds_.find(pd);
  if (pd_it == pds_.end()) {
    throw VerbsError(fmt::format("unknown protection domain {}", pd));
  }
  if (host == nullptr || length == 0) {
    throw VerbsError("memory region is empty");
  }
  if (iova + length < iova) {
    throw VerbsError("memory region wraps around the address space");
  }
  if ((access & (kAccessRemoteWrite)) != 0 && (access & kAccessLocalWrite) == 0) {
    throw VerbsError("remote write access needs local write access");
  }
  std::uint32_t key = 0;
  do {
    key = next_key_;
    next_key_ += 0x100u + 0x3bu;
  } while (key == 0 || mrs_.contains(key));
  mrs_.emplace(key, MemoryRegion{pd, host, iova, length, access});
  ++pd_it->second;
  return {key, key};
}

void Engine::dereg_mr(std::uint32_t lkey) {
  auto it = mrs_.find(lkey);
  if (it == mrs_.end()) {
    throw VerbsError(fmt::format("unknown memory key 0x{:x}", lkey));
  }
  --pds_[it->second.pd];
  mrs_.erase(it);
}

Engine::Handle Engine::create_cq() {
  const Handle cq = next_handle_++;
  cqs_[cq];
  return cq;
}

void Engine::destroy_cq(Handle cq) {
  for (const auto& [qpn, q] : qps_) {
    if (q.send_cq == cq || q.recv_cq == cq) {
      throw VerbsError(fmt::format("completion queue {} is used by QP 0x{:x}", cq, qpn));
    }
  }
  cqs_.erase(cq);
}

void Engine::set_completion_handler(Handle cq, CompletionHandler handler) {
  auto it = cqs_.find(cq);
  if (it == cqs_.end()) {
    throw VerbsError(fmt::format("unknown completion queue {}", cq));
  }
  it->second.handler = std::move(handler);
}

std::size_t Engine::poll_cq(Handle cq, std::span<Completion> out) {
  auto it = cqs_.find(cq);
  if (it == cqs_.end()) {
    throw VerbsError(fmt::format("unknown completion queue {}", cq));
  }
  std::size_t n = 0;
  while (n < out.size() && !it->second.entries.empty()) {
    out[n++] = it->second.entries.front();
    it->second.entries.pop_front();
  }
  return n;
}

std::uint32_t Engine::create_qp(Handle pd, Handle send_cq, Handle recv_cq) {
  auto pd_it = pds_.find(pd);
  if (pd_it == pds_.end()) {
    throw VerbsError(fmt::format("unknown protection domain {}", pd));
  }
  if (!cqs_.contains(send_cq) || !cqs_.contains(recv_cq)) {
    throw VerbsError("unknown completion queue");
  }
  const std::uint32_t qpn = next_qpn_++;
  QueuePair& q = qps_[qpn];
  q.qpn = qpn;
  q.pd = pd;
  q.send_cq = send_cq;
  q.recv_cq = recv_cq;
  ++pd_it->second;
  stats_.qps = qps_.size();
  return qpn;
}

void Engine::destroy_qp(std::uint32_t qpn) {
  QueuePair& q = qp(qpn);
  if (q.state != QpState::kReset) {
    fabric_.cancel(q.remote_node, qpn);
  }
  --pds_[q.pd];
  qps_.erase(qpn);
  stats_.qps = qps_.size();
}

Engine::QueuePair& Engine::qp(std::uint32_t qpn) {
  auto it = qps_.find(qpn);
  if (it == qps_.end()) {
    throw VerbsError(fmt::format("unknown queue pair 0x{:x}", qpn));
  }
  return it->second;
}

QpState Engine::qp_state(std::uint32_t qpn) const {
  auto it = qps_.find(qpn);
  if (it == qps_.end()) {
    throw VerbsError(fmt::format("unknown queue pair 0x{:x}", qpn));
  }
  return it->second.state;
}

void Engine::modify_qp(std::uint32_t qpn, const QpAttributes& a) {
  QueuePair& q = qp(qpn);
  const QpState from = q.state;
  const QpState to = a.state;
  if (to == QpState::kError) {
    if (from != QpState::kError) {
      enter_error(q);
    }
    return;
  }
  if (to == QpState::kReset) {
    if (from != QpState::kReset) {
      fabric_.cancel(q.remote_node, qpn);
    }
    QueuePair fresh;
    fresh.qpn = q.qpn;
    fresh.pd = q.pd;
    fresh.send_cq = q.send_cq;
    fresh.recv_cq = q.recv_cq;
    q = std::move(fresh);
    return;
  }
  if (from == QpState::kReset && to == QpState::kInit) {
    q.access = a.access;
  } else if (from == QpState::kInit && to == QpState::kRtr) {
    auto node = fabric_.resolve_gid(a.remote_gid);
    if (!node) {
      throw VerbsError(fmt::format("remote GID {} is not known in the mesh", a.remote_gid));
    }
    q.remote_node = *node;
    q.remote_qpn = a.remote_qpn;
    q.expected_msn = 0;
    q.expected_offset = 0;
  } else if (from == QpState::kRtr && to == QpState::kRts) {
    q.rnr_retry = a.rnr_retry;
    q.rnr_delay = a.rnr_delay;
  } else if (!(from == to && from != QpState::kReset)) {
    throw VerbsError(
        fmt::format("illegal QP state transition {} -> {}", to_string(from), to_string(to)));
  }
  q.state = to;
}

const Engine::MemoryRegion* Engine::find_mr(std::uint32_t key) const {
  auto it = mrs_.find(key);
  return it == mrs_.end() ? nullptr : &it->second;
}

std::byte* Engine::translate(const MemoryRegion* mr, Handle pd, std::uint64_t addr,
                             std::uint64_t length, std::uint32_t needed_access) const {
  if (mr == nullptr || mr->pd != pd || (needed_access & ~mr->access) != 0) {
    return nullptr;
  }
  // Written so that no sum can overflow: addr + length may wrap, the differences cannot.
  if (addr < mr->iova || length > mr->length || addr - mr->iova > mr->length - length) {
    return nullptr;
  }
  return mr->host + (addr - mr->iova);
}

void Engine::complete(Handle cq, const Completion& c) {
  ++stats_.completions;
  if (c.status != WcStatus::kSuccess) {
    ++stats_.completion_errors;
  }
  auto it = cqs_.find(cq);
  if (it == cqs_.end()) {
    return;
  }
  if (it->second.handler) {
    it->second.handler(c);
  } else {
    it->second.entries.push_back(c);
  }
}

void Engine::post_send(std::uint32_t qpn, const SendWr& wr) {
  QueuePair& q = qp(qpn);
  const WcOpcode opcode = completion_opcode(wr.opcode);
  if (q.state == QpState::kError) {
    complete(q.send_cq, {wr.wr_id, WcStatus::kFlushError, opcode, qpn, 0, 0, false});
    return;
  }
  if (q.state != QpState::kRts) {
    throw VerbsError(fmt::format("post_send on QP 0x{:x} in state {}", qpn, to_string(q.state)));
  }
  SendWqe wqe;
  wqe.wr = wr;
  if (wr.sge.length > 0) {
    const std::uint32_t access =
        wr.opcode == SendOpcode::kRdmaRead ? std::uint32_t{kAccessLocalWrite} : 0u;
    wqe.local = translate(find_mr(wr.sge.lkey), q.pd, wr.sge.addr, wr.sge.length, access);
    if (wqe.local == nullptr) {
      complete(q.send_cq, {wr.wr_id, WcStatus::kLocalProtectionError, opcode, qpn, 0, 0, false});
      enter_error(q);
      return;
    }
  }
  if (!fabric_.reachable(q.remote_node)) {
    complete(q.send_cq, {wr.wr_id, WcStatus::kRetryExceeded, opcode, qpn, 0, 0, false});
    enter_error(q);
    return;
  }
  wqe.msn = q.next_msn++;
  q.send_queue.push_back(wqe);
  transmit_pending(q);
}

void Engine::post_recv(std::uint32_t qpn, const RecvWr& wr) {
  QueuePair& q = qp(qpn);
  if (q.state == QpState::kError) {
    complete(q.recv_cq, {wr.wr_id, WcStatus::kFlushError, WcOpcode::kRecv, qpn, 0, 0, false});
    return;
  }
  if (q.state == QpState::kReset) {
    throw VerbsError(fmt::format("post_recv on QP 0x{:x} in state RESET", qpn));
  }
  q.recv_queue.push_back({wr});
}

void Engine::transmit_pending(QueuePair& q) {
  if (q.rnr_retry_at) {
    return;  // paused until the RNR timer fires
  }
  const std::uint32_t segment = config_.max_segment;
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
      if (is_write) {
        stats_.rdma_write_bytes += length;
      }
      offset += length;
    } while (offset < wr.sge.length);
  }
}

void Engine::complete_finished_sends(QueuePair& q) {
  while (!q.send_queue.empty() && q.send_queue.front().done) {
    const SendWqe& wqe = q.send_queue.front();
    if (wqe.wr.signaled) {
      complete(q.send_cq, {wqe.wr.wr_id, WcStatus::kSuccess, completion_opcode(wqe.wr.opcode),
                           q.qpn, wqe.wr.sge.length, 0, false});
    }
    q.send_queue.pop_front();
    if (q.next_to_transmit > 0) {
      --q.next_to_transmit;
    }
    q.rnr_retries_used = 0;
  }
}

void Engine::enter_error(QueuePair& q) {
  if (q.state != QpState::kReset) {
    fabric_.cancel(q.remote_node, q.qpn);
  }
  q.state = QpState::kError;
  q.rnr_retry_at.reset();
  for (const SendWqe& wqe : q.send_queue) {
    complete(q.send_cq, {wqe.wr.wr_id, WcStatus::kFlushError, completion_opcode(wqe.wr.opcode),
                         q.qpn, 0, 0, false});
  }
  q.send_queue.clear();
  q.next_to_transmit = 0;
  if (q.current_recv) {
    complete(q.recv_cq, {q.current_recv->wr.wr_id, WcStatus::kFlushError, WcOpcode::kRecv, q.qpn, 0,
                         0, false});
    q.current_recv.reset();
  }
  for (const RecvWqe& wqe : q.recv_queue) {
    complete(q.recv_cq, {wqe.wr.wr_id, WcStatus::kFlushError, WcOpcode::kRecv, q.qpn, 0, 0, false});
  }
  q.recv_queue.clear();
}

void Engine::fail_head(QueuePair& q, WcStatus status) {
  if (!q.send_queue.empty()) {
    const SendWqe wqe = q.send_queue.front();
    q.send_queue.pop_front();
    complete(q.send_cq,
             {wqe.wr.wr_id, status, completion_opcode(wqe.wr.opcode), q.qpn, 0, 0, false});
  }
  enter_error(q);
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

Placement Engine::place(NodeId from, const FrameHeader& h) {
  accepted_ = false;
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

void Engine::delivered(NodeId /*from*/, const FrameHeader& h) {
  if (!accepted_) {
    return;
  }
  accepted_ = false;
  auto it = qps_.find(h.dst_qpn);
  if (it == qps_.end()) {
    return;
  }
  QueuePair& q = it->second;
  switch (h.op) {
    case FrameOp::kSend:
    case FrameOp::kWrite: {
      stats_.bytes_received += h.payload_length;
      q.expected_offset += h.payload_length;
      if (h.op == FrameOp::kWrite && h.payload_length > 0 && write_observer_) {
        write_observer_(q.qpn, h.remote_addr, h.payload_length);
      }
      if (h.offset + h.payload_length < h.total_length) {
        return;
      }
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
      return;
    }
    case FrameOp::kReadRequest: {
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
      std::uint32_t offset = 0;
      do {
        const std::uint32_t length = std::min(config_.max_segment, h.total_length - offset);
        r.offset = offset;
        r.payload_length = length;
        r.flags = offset + length == h.total_length ? kFlagLast : 0;
        fabric_.send(q.remote_node, r, src == nullptr ? nullptr : src + offset);
        stats_.bytes_sent += length;
        offset += length;
      } while (offset < h.total_length);
      ++q.expected_msn;
      return;
    }
    case FrameOp::kReadResponse: {
      SendWqe& wqe = q.send_queue[h.msn - q.send_queue.front().msn];
      wqe.read_received += h.payload_length;
      stats_.bytes_received += h.payload_length;
      stats_.rdma_read_bytes += h.payload_length;
      if (wqe.read_received == wqe.wr.sge.length) {
        wqe.done = true;
        complete_finished_sends(q);
      }
      return;
    }
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
  for (auto& [qpn, q] : qps_) {
    if (q.remote_node == node && (q.state == QpState::kRtr || q.state == QpState::kRts)) {
      fail_head(q, WcStatus::kRetryExceeded);
    }
  }
}

}  // namespace ernic::emu
