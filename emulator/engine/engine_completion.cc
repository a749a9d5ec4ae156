#include "engine/engine.h"

#include "engine/completion_opcode.h"

// Completion delivery and the error state of a queue pair: what the application sees.
namespace ernic::emu {

void Engine::complete(Handle cq, const Completion& c) {
  ++stats_.completions;
  if (auto q = qps_.find(c.qpn); q != qps_.end()) {
    ++q->second.stats.cqes_posted;
  }
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

std::map<std::uint32_t, QpStats> Engine::qp_stats() const {
  std::map<std::uint32_t, QpStats> out;
  for (const auto& [qpn, q] : qps_) {
    out[qpn] = q.stats;
  }
  return out;
}

}  // namespace ernic::emu
