#include "send_request.h"

#include <cerrno>
#include <cstring>
#include <thread>

namespace ernic::verbs {

bool send_opcode(ibv_wr_opcode opcode, emu::SendOpcode& out) {
  switch (opcode) {
    case IBV_WR_SEND:
      out = emu::SendOpcode::kSend;
      return true;
    case IBV_WR_SEND_WITH_IMM:
      out = emu::SendOpcode::kSendWithImm;
      return true;
    case IBV_WR_RDMA_WRITE:
      out = emu::SendOpcode::kRdmaWrite;
      return true;
    case IBV_WR_RDMA_WRITE_WITH_IMM:
      out = emu::SendOpcode::kRdmaWriteWithImm;
      return true;
    case IBV_WR_RDMA_READ:
      out = emu::SendOpcode::kRdmaRead;
      return true;
    default:
      return false;
  }
}

int SendRequest::from_work_request(const Qp& qp, const ibv_send_wr& wr) {
  if (!send_opcode(wr.opcode, opcode) || wr.num_sge < 0) {
    return EINVAL;
  }
  wr_id = wr.wr_id;
  signaled = (wr.send_flags & IBV_SEND_SIGNALED) != 0 || qp.signal_all;
  imm = wr.imm_data;
  remote_addr = wr.wr.rdma.remote_addr;
  rkey = wr.wr.rdma.rkey;
  if ((wr.send_flags & IBV_SEND_INLINE) != 0 && opcode != emu::SendOpcode::kRdmaRead) {
    // ibv_sge and ibv_data_buf differ: the inline path reads addr and length from each sge.
    is_inline = true;
    std::uint64_t total = 0;
    for (int i = 0; i < wr.num_sge; ++i) {
      total += wr.sg_list[i].length;
    }
    if (total > qp.cap.max_inline_data) {
      return EINVAL;
    }
    length = static_cast<std::uint32_t>(total);
    inline_count = wr.num_sge;
    inline_sges = wr.sg_list;
    return 0;
  }
  if (static_cast<std::uint32_t>(wr.num_sge) > qp.cap.max_send_sge) {
    return EINVAL;
  }
  if (wr.num_sge == 1) {
    addr = wr.sg_list[0].addr;
    length = wr.sg_list[0].length;
    lkey = wr.sg_list[0].lkey;
  }
  return 0;
}

int enqueue_send(Qp& qp, const SendRequest& request) {
  const ibv_qp_state state = qp.base.qp.state;
  // A QP sends from RTS on; in ERR its requests complete flushed (the instance does that).
  if (state != IBV_QPS_RTS && state != IBV_QPS_ERR) {
    return EINVAL;
  }
  if (qp.send.outstanding() >= qp.send.depth) {
    return ENOMEM;
  }
  const std::uint64_t seq = qp.send.posted;
  const std::size_t slot = seq & (qp.send.wr_ids.size() - 1);
  emu::shm::SubmitEntry e{};
  e.kind = static_cast<std::uint8_t>(emu::shm::SubmitKind::kSend);
  e.wr_id = seq;
  e.qpn = qp.base.qp.qp_num;
  e.opcode = static_cast<std::uint8_t>(request.opcode);
  e.addr = request.addr;
  e.length = request.length;
  e.lkey = request.lkey;
  if (request.is_inline && request.length > 0) {
    std::byte* to = qp.inline_buffer.data + slot * qp.inline_buffer.slot_size;
    e.addr = reinterpret_cast<std::uint64_t>(to);
    e.lkey = qp.inline_buffer.lkey;
    request.copy_inline(to);
  }
  e.remote_addr = request.remote_addr;
  e.rkey = request.rkey;
  e.imm = request.imm;
  e.signaled = request.signaled ? 1 : 0;
  qp.send.wr_ids[slot] = request.wr_id;
  ++qp.send.posted;
  submit(*qp.context->state, e);
  return 0;
}

void SendRequest::copy_inline(std::byte* to) const {
  for (int i = 0; i < inline_count; ++i) {
    std::memcpy(to, reinterpret_cast<const void*>(inline_sges[i].addr), inline_sges[i].length);
    to += inline_sges[i].length;
  }
}

void submit(ContextState& state, const emu::shm::SubmitEntry& entry) {
  emu::shm::Area& area = state.channel.area();
  const std::uint32_t tail = area.submit_tail.value.load(std::memory_order_relaxed);
  while (tail - area.submit_head.value.load(std::memory_order_acquire) >= emu::shm::kSubmitSlots) {
    state.channel.ring_doorbell_if_needed();
    std::this_thread::yield();
  }
  area.submits[tail % emu::shm::kSubmitSlots] = entry;
  area.submit_tail.value.store(tail + 1, std::memory_order_seq_cst);
}

}  // namespace ernic::verbs
