#include "qp_transitions.h"

namespace ernic::verbs {
namespace {

struct Transition {
  ibv_qp_state from;
  ibv_qp_state to;
  int required;
  int optional;
};

constexpr int kRtrRequired = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                             IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
constexpr int kRtsRequired =
    IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
constexpr int kRtsOptional = IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH |
                             IBV_QP_PATH_MIG_STATE | IBV_QP_MIN_RNR_TIMER;

constexpr Transition kTransitions[] = {
    {IBV_QPS_RESET, IBV_QPS_INIT, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 0},
    {IBV_QPS_INIT, IBV_QPS_INIT, 0, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS},
    {IBV_QPS_INIT, IBV_QPS_RTR, kRtrRequired,
     IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX},
    {IBV_QPS_RTR, IBV_QPS_RTS, kRtsRequired, kRtsOptional},
    {IBV_QPS_RTS, IBV_QPS_RTS, 0, kRtsOptional},
};

}  // namespace

bool qp_transition_allowed(ibv_qp_state current, ibv_qp_state next, int mask) {
  if ((mask & IBV_QP_STATE) == 0) {
    next = current;
  }
  const int given = mask & ~IBV_QP_STATE;
  const bool served =
      [](ibv_qp_state s) {
        return s == IBV_QPS_RESET || s == IBV_QPS_INIT || s == IBV_QPS_RTR || s == IBV_QPS_RTS ||
               s == IBV_QPS_ERR;
      }(current) &&
      (next == IBV_QPS_RESET || next == IBV_QPS_INIT || next == IBV_QPS_RTR ||
       next == IBV_QPS_RTS || next == IBV_QPS_ERR);
  if (!served) {
    return false;
  }
  // Any state may go to RESET or ERR, with nothing else to say.
  if ((mask & IBV_QP_STATE) != 0 && (next == IBV_QPS_RESET || next == IBV_QPS_ERR)) {
    return given == 0 || (given & ~IBV_QP_CUR_STATE) == 0;
  }
  if (current == IBV_QPS_RESET && next == IBV_QPS_RESET) {
    return given == 0;
  }
  for (const Transition& t : kTransitions) {
    if (t.from == current && t.to == next) {
      return (given & t.required) == t.required && (given & ~(t.required | t.optional)) == 0;
    }
  }
  return false;
}

}  // namespace ernic::verbs
