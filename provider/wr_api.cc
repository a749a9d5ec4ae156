// The ibv_wr_* API (ibv_qp_to_qp_ex): requests are built between wr_start and wr_complete and
// posted together by wr_complete, all or none; a request the device cannot serve makes
// wr_complete fail with the error ibv_post_send would have returned for it.
#include <cerrno>
#include <cstring>

#include "provider.h"
#include "send_request.h"

namespace ernic::verbs {
namespace {

Qp& qp_of(ibv_qp_ex* qpx) {
  return *reinterpret_cast<Qp*>(qpx);
}

void fail(ibv_qp_ex* qpx, int error) {
  Qp& qp = qp_of(qpx);
  if (qp.build_error == 0) {
    qp.build_error = error;
  }
}

void begin(ibv_qp_ex* qpx, emu::SendOpcode opcode, std::uint32_t rkey, std::uint64_t remote,
           std::uint32_t imm) {
  Qp& qp = qp_of(qpx);
  SendRequest request;
  request.wr_id = qpx->wr_id;
  request.opcode = opcode;
  request.signaled = (qpx->wr_flags & IBV_SEND_SIGNALED) != 0 || qp.signal_all;
  request.rkey = rkey;
  request.remote_addr = remote;
  request.imm = imm;
  qp.building.push_back(request);
}

SendRequest* current(ibv_qp_ex* qpx) {
  Qp& qp = qp_of(qpx);
  if (qp.building.empty()) {
    fail(qpx, EINVAL);
    return nullptr;
  }
  return &qp.building.back();
}

void wr_start(ibv_qp_ex* qpx) {
  Qp& qp = qp_of(qpx);
  qp.building.clear();
  qp.build_error = 0;
}

int wr_complete(ibv_qp_ex* qpx) {
  Qp& qp = qp_of(qpx);
  ContextState& state = *qp.context->state;
  std::lock_guard lock(state.data);
  int error = qp.build_error;
  if (error == 0 && qp.send.outstanding() + qp.building.size() > qp.send.depth) {
    error = ENOMEM;
  }
  for (std::size_t i = 0; error == 0 && i < qp.building.size(); ++i) {
    error = enqueue_send(qp, qp.building[i]);
  }
  qp.building.clear();
  qp.build_error = 0;
  state.channel.ring_doorbell_if_needed();
  return error;
}

void wr_abort(ibv_qp_ex* qpx) {
  wr_start(qpx);
}

void wr_send(ibv_qp_ex* qpx) {
  begin(qpx, emu::SendOpcode::kSend, 0, 0, 0);
}

void wr_send_imm(ibv_qp_ex* qpx, __be32 imm) {
  begin(qpx, emu::SendOpcode::kSendWithImm, 0, 0, imm);
}

void wr_rdma_write(ibv_qp_ex* qpx, uint32_t rkey, uint64_t remote) {
  begin(qpx, emu::SendOpcode::kRdmaWrite, rkey, remote, 0);
}

void wr_rdma_write_imm(ibv_qp_ex* qpx, uint32_t rkey, uint64_t remote, __be32 imm) {
  begin(qpx, emu::SendOpcode::kRdmaWriteWithImm, rkey, remote, imm);
}

void wr_rdma_read(ibv_qp_ex* qpx, uint32_t rkey, uint64_t remote) {
  begin(qpx, emu::SendOpcode::kRdmaRead, rkey, remote, 0);
}

void wr_set_sge(ibv_qp_ex* qpx, uint32_t lkey, uint64_t addr, uint32_t length) {
  if (SendRequest* request = current(qpx)) {
    request->lkey = lkey;
    request->addr = addr;
    request->length = length;
  }
}

void wr_set_sge_list(ibv_qp_ex* qpx, size_t count, const ibv_sge* list) {
  if (count > qp_of(qpx).cap.max_send_sge) {
    fail(qpx, EINVAL);
  } else if (count == 1) {
    wr_set_sge(qpx, list[0].lkey, list[0].addr, list[0].length);
  }
}

// The payload is copied now, into the inline slot the request will have once posted.
void wr_set_inline_data_list(ibv_qp_ex* qpx, size_t count, const ibv_data_buf* parts) {
  Qp& qp = qp_of(qpx);
  SendRequest* request = current(qpx);
  if (request == nullptr) {
    return;
  }
  std::size_t total = 0;
  for (std::size_t i = 0; i < count; ++i) {
    total += parts[i].length;
  }
  const std::uint64_t seq = qp.send.posted + qp.building.size() - 1;
  if (total > qp.cap.max_inline_data || request->opcode == emu::SendOpcode::kRdmaRead) {
    fail(qpx, EINVAL);
    return;
  }
  if (seq - qp.send.retired >= qp.send.depth) {
    fail(qpx, ENOMEM);  // its slot still belongs to a request in flight
    return;
  }
  std::byte* to =
      qp.inline_buffer.data + (seq & (qp.send.wr_ids.size() - 1)) * qp.inline_buffer.slot_size;
  request->addr = reinterpret_cast<std::uint64_t>(to);
  request->lkey = qp.inline_buffer.lkey;
  request->length = static_cast<std::uint32_t>(total);
  for (std::size_t i = 0; i < count; ++i) {
    std::memcpy(to, parts[i].addr, parts[i].length);
    to += parts[i].length;
  }
}

void wr_set_inline_data(ibv_qp_ex* qpx, void* addr, size_t length) {
  const ibv_data_buf part{addr, length};
  wr_set_inline_data_list(qpx, 1, &part);
}

// What the device lacks: atomics, memory windows, invalidation, TSO, UD and XRC addressing.
void wr_atomic_cmp_swp(ibv_qp_ex* qpx, uint32_t, uint64_t, uint64_t, uint64_t) {
  fail(qpx, EOPNOTSUPP);
}
void wr_atomic_fetch_add(ibv_qp_ex* qpx, uint32_t, uint64_t, uint64_t) {
  fail(qpx, EOPNOTSUPP);
}
void wr_bind_mw(ibv_qp_ex* qpx, ibv_mw*, uint32_t, const ibv_mw_bind_info*) {
  fail(qpx, EOPNOTSUPP);
}
void wr_local_inv(ibv_qp_ex* qpx, uint32_t) {
  fail(qpx, EOPNOTSUPP);
}
void wr_send_inv(ibv_qp_ex* qpx, uint32_t) {
  fail(qpx, EOPNOTSUPP);
}
void wr_send_tso(ibv_qp_ex* qpx, void*, uint16_t, uint16_t) {
  fail(qpx, EOPNOTSUPP);
}
void wr_set_ud_addr(ibv_qp_ex* qpx, ibv_ah*, uint32_t, uint32_t) {
  fail(qpx, EOPNOTSUPP);
}
void wr_set_xrc_srqn(ibv_qp_ex* qpx, uint32_t) {
  fail(qpx, EOPNOTSUPP);
}
void wr_atomic_write(ibv_qp_ex* qpx, uint32_t, uint64_t, const void*) {
  fail(qpx, EOPNOTSUPP);
}

}  // namespace

void install_wr_api(Qp& qp) {
  ibv_qp_ex& x = qp.base.qp_ex;
  x.wr_start = wr_start;
  x.wr_complete = wr_complete;
  x.wr_abort = wr_abort;
  x.wr_send = wr_send;
  x.wr_send_imm = wr_send_imm;
  x.wr_rdma_write = wr_rdma_write;
  x.wr_rdma_write_imm = wr_rdma_write_imm;
  x.wr_rdma_read = wr_rdma_read;
  x.wr_set_sge = wr_set_sge;
  x.wr_set_sge_list = wr_set_sge_list;
  x.wr_set_inline_data = wr_set_inline_data;
  x.wr_set_inline_data_list = wr_set_inline_data_list;
  x.wr_atomic_cmp_swp = wr_atomic_cmp_swp;
  x.wr_atomic_fetch_add = wr_atomic_fetch_add;
  x.wr_bind_mw = wr_bind_mw;
  x.wr_local_inv = wr_local_inv;
  x.wr_send_inv = wr_send_inv;
  x.wr_send_tso = wr_send_tso;
  x.wr_set_ud_addr = wr_set_ud_addr;
  x.wr_set_xrc_srqn = wr_set_xrc_srqn;
  x.wr_atomic_write = wr_atomic_write;
}

}  // namespace ernic::verbs
