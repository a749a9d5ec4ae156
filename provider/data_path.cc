// The data path: posting work requests into the instance's submit ring and polling completions
// out of its completion ring, with no system call on either side while both are busy. The
// program calls these inline (ibv_post_send, ibv_post_recv, ibv_poll_cq) through the context's
// ops, millions of times a second: keep them lean.
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "provider.h"
#include "send_request.h"

namespace ernic::verbs {
namespace {

// A completion the provider makes itself for requests the instance can no longer complete.
constexpr std::uint8_t kInstanceLost = 0xfd;
// How many empty polls pass between looks at whether the instance is still there.
constexpr unsigned kPollsPerLivenessCheck = 4096;
// How many empty polls on the instance's own CPU before letting it run.
constexpr unsigned kPollsBeforeYield = 64;

ibv_wc_status wc_status(std::uint8_t status) {
  switch (status) {
    case static_cast<std::uint8_t>(emu::WcStatus::kSuccess):
      return IBV_WC_SUCCESS;
    case static_cast<std::uint8_t>(emu::WcStatus::kLocalLengthError):
      return IBV_WC_LOC_LEN_ERR;
    case static_cast<std::uint8_t>(emu::WcStatus::kLocalProtectionError):
      return IBV_WC_LOC_PROT_ERR;
    case static_cast<std::uint8_t>(emu::WcStatus::kFlushError):
      return IBV_WC_WR_FLUSH_ERR;
    case static_cast<std::uint8_t>(emu::WcStatus::kRemoteAccessError):
      return IBV_WC_REM_ACCESS_ERR;
    case static_cast<std::uint8_t>(emu::WcStatus::kRemoteInvalidRequest):
      return IBV_WC_REM_INV_REQ_ERR;
    case static_cast<std::uint8_t>(emu::WcStatus::kRemoteOperationError):
      return IBV_WC_REM_OP_ERR;
    case static_cast<std::uint8_t>(emu::WcStatus::kRetryExceeded):
      return IBV_WC_RETRY_EXC_ERR;
    case static_cast<std::uint8_t>(emu::WcStatus::kRnrRetryExceeded):
      return IBV_WC_RNR_RETRY_EXC_ERR;
    case kInstanceLost:
      return IBV_WC_FATAL_ERR;
    default:
      return IBV_WC_LOC_QP_OP_ERR;
  }
}

ibv_wc_opcode wc_opcode(std::uint8_t opcode) {
  switch (static_cast<emu::WcOpcode>(opcode)) {
    case emu::WcOpcode::kRdmaWrite:
      return IBV_WC_RDMA_WRITE;
    case emu::WcOpcode::kRdmaRead:
      return IBV_WC_RDMA_READ;
    case emu::WcOpcode::kRecv:
      return IBV_WC_RECV;
    case emu::WcOpcode::kRecvRdmaWithImm:
      return IBV_WC_RECV_RDMA_WITH_IMM;
    default:
      return IBV_WC_SEND;
  }
}

// Moves what the instance completed from the shared ring to the CQs' queues.
void sort_completions(ContextState& state) {
  emu::shm::Area& area = state.channel.area();
  std::uint32_t head = area.completion_head.value.load(std::memory_order_relaxed);
  const std::uint32_t tail = area.completion_tail.value.load(std::memory_order_acquire);
  for (; head != tail; ++head) {
    const emu::shm::CompletionEntry& e = area.completions[head % emu::shm::kCompletionSlots];
    auto qp = state.qps.find(e.qpn);
    if (qp == state.qps.end()) {
      continue;  // its QP was destroyed meanwhile
    }
    const bool receive = (e.wr_id & kReceiveTag) != 0;
    ibv_cq* cq = receive ? qp->second->base.qp.recv_cq : qp->second->base.qp.send_cq;
    reinterpret_cast<Cq*>(cq)->ready.push_back(e);
  }
  area.completion_head.value.store(head, std::memory_order_release);
}

// The instance is gone (killed, or it exited): every request it held fails, the first of each
// queue pair with a fatal error and the rest flushed, as when a NIC dies under its QPs.
void fail_everything(ContextState& state) {
  state.instance_lost = true;
  for (auto& [qpn, qp] : state.qps) {
    for (WorkQueue* queue : {&qp->send, &qp->recv}) {
      const bool receive = queue == &qp->recv;
      ibv_cq* cq = receive ? qp->base.qp.recv_cq : qp->base.qp.send_cq;
      for (std::uint64_t seq = queue->retired; seq < queue->posted; ++seq) {
        emu::shm::CompletionEntry e{};
        e.wr_id = seq | (receive ? kReceiveTag : 0);
        e.qpn = qpn;
        e.status = seq == queue->retired ? kInstanceLost
                                         : static_cast<std::uint8_t>(emu::WcStatus::kFlushError);
        e.opcode = static_cast<std::uint8_t>(receive ? emu::WcOpcode::kRecv : emu::WcOpcode::kSend);
        reinterpret_cast<Cq*>(cq)->ready.push_back(e);
      }
    }
    qp->base.qp.state = IBV_QPS_ERR;
  }
  std::fprintf(stderr, "ernic: the ERNIC instance serving this device went away\n");
}

// Polls politely: with more spinners than CPUs (two programs, two instances on two cores) each
// hand-off waits for a scheduler's preemption unless the spinner yields. A program on the CPU its
// instance's loop last ran on yields too rather than sleeping on the completion eventfd: the
// yield lets a runnable instance run at once, where the sleep cost a wake-up per message
// (bench/guest_region.sh, socket path: ib_send_lat 4 KiB typical 12.9-24.1 us sleeping, 5.5-5.7
// us yielding, 2026-12-06).
void let_instance_run() {
  sched_yield();
}

void poll_idle(ContextState& state) {
  ++state.empty_polls;
  if (state.empty_polls % kPollsBeforeYield == 0) {
    let_instance_run();
  }
  if (state.empty_polls % kPollsPerLivenessCheck == 0 && !state.instance_lost &&
      !state.channel.instance_alive()) {
    fail_everything(state);
  }
}

}  // namespace

int post_send(ibv_qp* ibv, ibv_send_wr* wr, ibv_send_wr** bad) {
  auto& qp = *reinterpret_cast<Qp*>(ibv);
  ContextState& state = *qp.context->state;
  std::lock_guard lock(state.data);
  int error = 0;
  for (; wr != nullptr; wr = wr->next) {
    SendRequest request;
    error = request.from_work_request(qp, *wr);
    if (error == 0) {
      error = enqueue_send(qp, request);
    }
    if (error != 0) {
      *bad = wr;
      break;
    }
  }
  state.channel.ring_doorbell_if_needed();
  return error;
}

int post_recv(ibv_qp* ibv, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  auto& qp = *reinterpret_cast<Qp*>(ibv);
  ContextState& state = *qp.context->state;
  std::lock_guard lock(state.data);
  int error = 0;
  for (; wr != nullptr; wr = wr->next) {
    // Receives may be posted from INIT on (C10-97.2.1), and in ERR they complete flushed.
    if (ibv->state == IBV_QPS_RESET) {
      error = EINVAL;
    } else if (wr->num_sge < 0 || static_cast<std::uint32_t>(wr->num_sge) > qp.cap.max_recv_sge) {
      error = EINVAL;
    } else if (qp.recv.outstanding() >= qp.recv.depth) {
      error = ENOMEM;
    }
    if (error != 0) {
      *bad = wr;
      break;
    }
    emu::shm::SubmitEntry e{};
    e.kind = static_cast<std::uint8_t>(emu::shm::SubmitKind::kRecv);
    const std::uint64_t seq = qp.recv.posted++;
    qp.recv.wr_ids[seq & (qp.recv.wr_ids.size() - 1)] = wr->wr_id;
    e.wr_id = seq | kReceiveTag;
    e.qpn = ibv->qp_num;
    if (wr->num_sge == 1) {
      e.addr = wr->sg_list[0].addr;
      e.length = wr->sg_list[0].length;
      e.lkey = wr->sg_list[0].lkey;
    }
    submit(state, e);
  }
  state.channel.ring_doorbell_if_needed();
  return error;
}

int poll_cq(ibv_cq* ibv, int entries, ibv_wc* wc) {
  auto& cq = *reinterpret_cast<Cq*>(ibv);
  ContextState& state = state_of(ibv->context);
  std::lock_guard lock(state.data);
  if (state.channel.region_base() == nullptr) {
    state.channel.area().client.note(state.polls);
  }
  if (cq.ready.empty()) {
    sort_completions(state);
    if (cq.ready.empty()) {
      poll_idle(state);
      return 0;
    }
  }
  state.empty_polls = 0;
  int n = 0;
  for (; n < entries && !cq.ready.empty(); ++n) {
    const emu::shm::CompletionEntry e = cq.ready.front();
    cq.ready.pop_front();
    ++cq.taken;
    auto found = state.qps.find(e.qpn);
    if (found == state.qps.end()) {
      --n;
      continue;
    }
    Qp& qp = *found->second;
    const bool receive = (e.wr_id & kReceiveTag) != 0;
    WorkQueue& queue = receive ? qp.recv : qp.send;
    const std::uint64_t seq = e.wr_id & ~kReceiveTag;
    ibv_wc& out = wc[n];
    out = {};
    out.wr_id = queue.wr_ids[seq & (queue.wr_ids.size() - 1)];
    queue.retired = std::max(queue.retired, seq + 1);
    out.status = wc_status(e.status);
    out.opcode = wc_opcode(e.opcode);
    out.byte_len = e.byte_len;
    out.qp_num = e.qpn;
    out.vendor_err = out.status == IBV_WC_SUCCESS ? 0 : e.status;
    if (e.has_imm != 0) {
      out.imm_data = e.imm;
      out.wc_flags = IBV_WC_WITH_IMM;
    }
    if (out.status != IBV_WC_SUCCESS) {
      qp.base.qp.state = IBV_QPS_ERR;
    }
  }
  return n;
}

}  // namespace ernic::verbs
