// ibv_modify_qp and ibv_query_qp: the QP state machine checked here, as a NIC's driver checks it,
// before the instance moves its queue pair.
#include <cerrno>
#include <chrono>
#include <cstring>

#include "engine/wire.h"
#include "frontend/shm_messages.h"
#include "frontend/verbs_device.h"
#include "provider.h"
#include "qp_transitions.h"

namespace ernic::verbs {
namespace {

emu::QpState engine_state(ibv_qp_state state) {
  switch (state) {
    case IBV_QPS_INIT:
      return emu::QpState::kInit;
    case IBV_QPS_RTR:
      return emu::QpState::kRtr;
    case IBV_QPS_RTS:
      return emu::QpState::kRts;
    case IBV_QPS_ERR:
      return emu::QpState::kError;
    default:
      return emu::QpState::kReset;
  }
}

// InfiniBand's encoding of the RNR NAK timer (IBTA table 45), in microseconds; 0 is the longest.
std::chrono::microseconds rnr_delay(std::uint8_t timer) {
  static constexpr std::uint32_t kMicroseconds[32] = {
      655360, 10,    20,    30,    40,    60,     80,     120,    160,    240,   320,
      480,    640,   960,   1280,  1920,  2560,   3840,   5120,   7680,   10240, 15360,
      20480,  30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520};
  return std::chrono::microseconds(kMicroseconds[timer & 31]);
}

const char* ibv_qp_state_name(ibv_qp_state state) {
  static const char* const kNames[] = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"};
  return state <= IBV_QPS_ERR ? kNames[state] : "unknown";
}

int check_attributes(const Qp& qp, const ibv_qp_attr& attr, int mask) {
  if ((mask & IBV_QP_PORT) != 0 && attr.port_num != 1) {
    return EINVAL;
  }
  if ((mask & IBV_QP_PKEY_INDEX) != 0 && attr.pkey_index != 0) {
    return EINVAL;
  }
  if ((mask & IBV_QP_AV) != 0 && (!attr.ah_attr.is_global || attr.ah_attr.port_num > 1)) {
    // RoCE addresses a peer by GID: an address vector without a global route header has no
    // destination on an Ethernet link.
    return EINVAL;
  }
  if ((mask & IBV_QP_PATH_MTU) != 0 && attr.path_mtu > IBV_MTU_4096) {
    return EINVAL;
  }
  if ((mask & IBV_QP_CUR_STATE) != 0 && attr.cur_qp_state != qp.base.qp.state) {
    return EINVAL;
  }
  if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) != 0 && attr.max_rd_atomic > 16) {
    return EINVAL;
  }
  if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) != 0 && attr.max_dest_rd_atomic > 16) {
    return EINVAL;
  }
  return 0;
}

void remember(Qp& qp, const ibv_qp_attr& attr, int mask) {
  ibv_qp_attr& kept = qp.attributes;
  if (mask & IBV_QP_ACCESS_FLAGS)
    kept.qp_access_flags = attr.qp_access_flags;
  if (mask & IBV_QP_PKEY_INDEX)
    kept.pkey_index = attr.pkey_index;
  if (mask & IBV_QP_PORT)
    kept.port_num = attr.port_num;
  if (mask & IBV_QP_AV)
    kept.ah_attr = attr.ah_attr;
  if (mask & IBV_QP_PATH_MTU)
    kept.path_mtu = attr.path_mtu;
  if (mask & IBV_QP_DEST_QPN)
    kept.dest_qp_num = attr.dest_qp_num;
  if (mask & IBV_QP_RQ_PSN)
    kept.rq_psn = attr.rq_psn;
  if (mask & IBV_QP_SQ_PSN)
    kept.sq_psn = attr.sq_psn;
  if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
    kept.max_dest_rd_atomic = attr.max_dest_rd_atomic;
  if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
    kept.max_rd_atomic = attr.max_rd_atomic;
  if (mask & IBV_QP_MIN_RNR_TIMER)
    kept.min_rnr_timer = attr.min_rnr_timer;
  if (mask & IBV_QP_TIMEOUT)
    kept.timeout = attr.timeout;
  if (mask & IBV_QP_RETRY_CNT)
    kept.retry_cnt = attr.retry_cnt;
  if (mask & IBV_QP_RNR_RETRY)
    kept.rnr_retry = attr.rnr_retry;
}

}  // namespace

int modify_qp(ibv_qp* ibv, ibv_qp_attr* attr, int mask) {
  auto& qp = *reinterpret_cast<Qp*>(ibv);
  const ibv_qp_state current = ibv->state;
  const ibv_qp_state next = (mask & IBV_QP_STATE) != 0 ? attr->qp_state : current;
  if (!qp_transition_allowed(current, next, mask)) {
    debug("ibv_modify_qp: QP 0x%x %s -> %s with attribute mask 0x%x: not a valid transition",
          ibv->qp_num, ibv_qp_state_name(current), ibv_qp_state_name(next), mask);
    return EINVAL;
  }
  if (const int error = check_attributes(qp, *attr, mask); error != 0) {
    debug("ibv_modify_qp: QP 0x%x: %s", ibv->qp_num, strerror(error));
    return error;
  }
  emu::QpAttributes to;
  to.state = engine_state(next);
  to.access = static_cast<std::uint32_t>((mask & IBV_QP_ACCESS_FLAGS) != 0
                                             ? attr->qp_access_flags
                                             : qp.attributes.qp_access_flags) &
              (emu::kAccessRemoteWrite | emu::kAccessRemoteRead | emu::kAccessLocalWrite);
  if (next == IBV_QPS_RTR && current == IBV_QPS_INIT) {
    emu::verbs_device::Gid gid;
    std::copy(std::begin(attr->ah_attr.grh.dgid.raw), std::end(attr->ah_attr.grh.dgid.raw),
              gid.begin());
    to.remote_gid = emu::verbs_device::gid_text(gid);
    to.remote_qpn = attr->dest_qp_num;
  }
  const std::uint8_t rnr_retry =
      (mask & IBV_QP_RNR_RETRY) != 0 ? attr->rnr_retry : qp.attributes.rnr_retry;
  to.rnr_retry = rnr_retry;
  // The requester waits as long as its peer's responder asks; both ends of a perftest or
  // ibv_rc_pingpong pair set the same timer, so this side's stands for the peer's.
  to.rnr_delay = rnr_delay((mask & IBV_QP_MIN_RNR_TIMER) != 0 ? attr->min_rnr_timer
                                                              : qp.attributes.min_rnr_timer);
  const emu::ByteWriter w = emu::shm::modify_qp_request(ibv->qp_num, to);
  ContextState& state = state_of(ibv->context);
  {
    std::lock_guard lock(state.control);
    if (const int error = state.channel.call(emu::shm::Op::kModifyQp, w.bytes()); error != 0) {
      debug("ibv_modify_qp: %s", state.channel.last_error().c_str());
      return error;
    }
  }
  std::lock_guard data(state.data);
  remember(qp, *attr, mask);
  if (next == IBV_QPS_RESET) {
    qp.send.posted = qp.send.retired = 0;
    qp.recv.posted = qp.recv.retired = 0;
    qp.attributes = {};
  }
  ibv->state = next;
  return 0;
}

int query_qp(ibv_qp* ibv, ibv_qp_attr* attr, int, ibv_qp_init_attr* init) {
  auto& qp = *reinterpret_cast<Qp*>(ibv);
  *attr = qp.attributes;
  attr->qp_state = ibv->state;
  attr->cur_qp_state = ibv->state;
  attr->cap = qp.cap;
  attr->port_num = attr->port_num == 0 ? 1 : attr->port_num;
  *init = {};
  init->qp_context = ibv->qp_context;
  init->send_cq = ibv->send_cq;
  init->recv_cq = ibv->recv_cq;
  init->cap = qp.cap;
  init->qp_type = ibv->qp_type;
  init->sq_sig_all = qp.signal_all ? 1 : 0;
  return 0;
}

}  // namespace ernic::verbs
