#include "engine/engine.h"

#include <random>

#include <fmt/format.h>

#include "engine/completion_opcode.h"

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
    throw VerbsError(fmt::format("protection domain {} still has {} users", pd, it->second), EBUSY);
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
      throw VerbsError(fmt::format("completion queue {} is used by QP 0x{:x}", cq, qpn), EBUSY);
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
    fresh.stats = q.stats;
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
  ++q.stats.wqes_processed;
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
  if (q.send_queue.empty()) {
    ++stats_.latency_requests;
  }
  if (wr.sge.length >= kStreamRequestBytes) {
    ++stats_.stream_requests;
  }
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
  ++q.stats.wqes_processed;
  q.recv_queue.push_back({wr});
}

}  // namespace ernic::emu
