// Creating and destroying queue pairs. The device serves RC queue pairs with one scatter-gather
// entry per request and no shared receive queue; it refuses anything else as a NIC without the
// capability does (EOPNOTSUPP for a kind it lacks, EINVAL for a size beyond its limits).
#include <sys/mman.h>

#include <bit>
#include <cerrno>
#include <cstring>

#include "device_identity.h"
#include "engine/wire.h"
#include "provider.h"

namespace ernic::verbs {
namespace {

constexpr std::uint64_t kSupportedSendOps =
    IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_WRITE |
    IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ;
constexpr std::uint32_t kSupportedInitMask =
    IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS | IBV_QP_INIT_ATTR_CREATE_FLAGS;

int check_request(const ibv_qp_init_attr_ex& attr) {
  if (attr.qp_type != IBV_QPT_RC) {
    return EOPNOTSUPP;
  }
  if ((attr.comp_mask & ~kSupportedInitMask) != 0 || attr.srq != nullptr ||
      ((attr.comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) != 0 && attr.create_flags != 0)) {
    return EOPNOTSUPP;
  }
  if ((attr.comp_mask & IBV_QP_INIT_ATTR_PD) == 0 || attr.pd == nullptr ||
      attr.send_cq == nullptr || attr.recv_cq == nullptr) {
    return EINVAL;
  }
  if ((attr.comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) != 0 &&
      (attr.send_ops_flags & ~kSupportedSendOps) != 0) {
    return EOPNOTSUPP;
  }
  const ibv_qp_cap& cap = attr.cap;
  if (cap.max_send_wr > kMaxQpWr || cap.max_recv_wr > kMaxQpWr || cap.max_send_sge > kMaxSge ||
      cap.max_recv_sge > kMaxSge || cap.max_inline_data > kMaxInlineData) {
    return EINVAL;
  }
  return 0;
}

void size_queue(WorkQueue& queue, std::uint32_t depth) {
  queue.depth = depth;
  queue.wr_ids.assign(std::bit_ceil(std::max<std::uint32_t>(depth, 1)), 0);
}

// Inline payloads are copied at post time into slots of memory the instance maps, one slot per
// send queue entry, and sent from there: the program may reuse its buffer once the post returns.
int create_inline_buffer(ContextState& state, Qp& qp, std::uint32_t pd) {
  if (qp.cap.max_inline_data == 0 || qp.send.wr_ids.empty()) {
    return 0;
  }
  InlineBuffer& buffer = qp.inline_buffer;
  buffer.slot_size = (qp.cap.max_inline_data + 63) & ~63u;
  const std::size_t size = std::size_t{buffer.slot_size} * qp.send.wr_ids.size();
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    return ENOMEM;
  }
  buffer.data = static_cast<std::byte*>(p);
  SharedPages::Share share;
  std::string why;
  if (const int error = state.pages.acquire(p, size, share, why); error != 0) {
    debug("inline buffer: %s", why.c_str());
    return error;
  }
  buffer.region = share.region;
  emu::ByteWriter w;
  w.u32(pd);
  w.u32(share.region);
  w.u64(share.offset);
  w.u64(size);
  w.u64(reinterpret_cast<std::uint64_t>(p));
  w.u32(emu::kAccessLocalWrite);
  std::vector<std::byte> answer;
  if (const int error = state.channel.call(emu::shm::Op::kRegisterMr, w.bytes(), {}, &answer);
      error != 0) {
    return error;
  }
  buffer.lkey = emu::ByteReader(answer).u32();
  return 0;
}

void destroy_inline_buffer(ContextState& state, Qp& qp) {
  InlineBuffer& buffer = qp.inline_buffer;
  if (buffer.data == nullptr) {
    return;
  }
  if (buffer.lkey != 0) {
    emu::ByteWriter w;
    w.u32(buffer.lkey);
    state.channel.call(emu::shm::Op::kDeregisterMr, w.bytes());
  }
  if (buffer.region != 0) {
    state.pages.release(buffer.region);
  }
  munmap(buffer.data, std::size_t{buffer.slot_size} * qp.send.wr_ids.size());
  buffer = {};
}

void destroy_at_instance(ContextState& state, std::uint32_t qpn) {
  emu::ByteWriter w;
  w.u32(qpn);
  state.channel.call(emu::shm::Op::kDestroyQp, w.bytes());
}

}  // namespace

ibv_qp* create_qp_ex(ibv_context* context, ibv_qp_init_attr_ex* attr) {
  if (const int error = check_request(*attr); error != 0) {
    errno = error;
    return nullptr;
  }
  ContextState& state = state_of(context);
  std::lock_guard lock(state.control);
  const auto& pd = *reinterpret_cast<Pd*>(attr->pd);
  emu::ByteWriter w;
  w.u32(pd.handle);
  w.u32(reinterpret_cast<Cq*>(attr->send_cq)->handle);
  w.u32(reinterpret_cast<Cq*>(attr->recv_cq)->handle);
  std::vector<std::byte> answer;
  if (const int error = state.channel.call(emu::shm::Op::kCreateQp, w.bytes(), {}, &answer);
      error != 0) {
    debug("ibv_create_qp: %s", state.channel.last_error().c_str());
    errno = error;
    return nullptr;
  }
  const std::uint32_t qpn = emu::ByteReader(answer).u32();
  auto* qp = new Qp{};
  qp->context = reinterpret_cast<Context*>(reinterpret_cast<char*>(context) -
                                           offsetof(Context, base.context));
  qp->cap = attr->cap;
  qp->signal_all = attr->sq_sig_all != 0;
  size_queue(qp->send, attr->cap.max_send_wr);
  size_queue(qp->recv, attr->cap.max_recv_wr);
  if (const int error = create_inline_buffer(state, *qp, pd.handle); error != 0) {
    destroy_inline_buffer(state, *qp);
    destroy_at_instance(state, qpn);
    delete qp;
    errno = error;
    return nullptr;
  }
  ibv_qp& base = qp->base.qp;
  base.context = context;
  base.qp_context = attr->qp_context;
  base.pd = attr->pd;
  base.send_cq = attr->send_cq;
  base.recv_cq = attr->recv_cq;
  base.handle = qpn;
  base.qp_num = qpn;
  base.state = IBV_QPS_RESET;
  base.qp_type = IBV_QPT_RC;
  pthread_mutex_init(&base.mutex, nullptr);
  pthread_cond_init(&base.cond, nullptr);
  if ((attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) != 0) {
    qp->base.comp_mask |= kVerbsQpExtended;
    install_wr_api(*qp);
  }
  std::lock_guard data(state.data);
  state.qps[qpn] = qp;
  return &base;
}

ibv_qp* create_qp(ibv_pd* pd, ibv_qp_init_attr* attr) {
  ibv_qp_init_attr_ex extended{};
  std::memcpy(&extended, attr, sizeof *attr);
  extended.comp_mask = IBV_QP_INIT_ATTR_PD;
  extended.pd = pd;
  ibv_qp* qp = create_qp_ex(pd->context, &extended);
  if (qp != nullptr) {
    attr->cap = extended.cap;
  }
  return qp;
}

int destroy_qp(ibv_qp* ibv) {
  auto* qp = reinterpret_cast<Qp*>(ibv);
  ContextState& state = state_of(ibv->context);
  std::lock_guard lock(state.control);
  destroy_at_instance(state, ibv->qp_num);
  destroy_inline_buffer(state, *qp);
  {
    std::lock_guard data(state.data);
    state.qps.erase(ibv->qp_num);
  }
  pthread_cond_destroy(&ibv->cond);
  pthread_mutex_destroy(&ibv->mutex);
  delete qp;
  return 0;
}

}  // namespace ernic::verbs
