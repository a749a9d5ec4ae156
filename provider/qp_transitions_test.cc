#include "qp_transitions.h"

#include <catch2/catch.hpp>

namespace ernic::verbs {
namespace {

constexpr int kInit = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
constexpr int kRtr = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                     IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
constexpr int kRts = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;

TEST_CASE("an RC QP goes RESET, INIT, RTR, RTS with the attributes each step requires") {
  // The masks perftest and ibv_rc_pingpong use.
  CHECK(qp_transition_allowed(IBV_QPS_RESET, IBV_QPS_INIT, kInit));
  CHECK(qp_transition_allowed(IBV_QPS_INIT, IBV_QPS_RTR, kRtr));
  CHECK(qp_transition_allowed(IBV_QPS_RTR, IBV_QPS_RTS, kRts));
  CHECK(qp_transition_allowed(IBV_QPS_RTS, IBV_QPS_RTS, IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER));
}

TEST_CASE("a transition missing a required attribute, or with one it does not take, is refused") {
  CHECK_FALSE(qp_transition_allowed(IBV_QPS_RESET, IBV_QPS_INIT, kInit & ~IBV_QP_PORT));
  CHECK_FALSE(qp_transition_allowed(IBV_QPS_INIT, IBV_QPS_RTR, kRtr & ~IBV_QP_AV));
  CHECK_FALSE(qp_transition_allowed(IBV_QPS_RTR, IBV_QPS_RTS, kRts & ~IBV_QP_SQ_PSN));
  CHECK_FALSE(qp_transition_allowed(IBV_QPS_RESET, IBV_QPS_INIT, kInit | IBV_QP_DEST_QPN));
  CHECK_FALSE(qp_transition_allowed(IBV_QPS_INIT, IBV_QPS_RTR, kRtr | IBV_QP_SQ_PSN));
}

TEST_CASE("states are not skipped, and SQD is not served") {
  CHECK_FALSE(qp_transition_allowed(IBV_QPS_RESET, IBV_QPS_RTR, kRtr));
  CHECK_FALSE(qp_transition_allowed(IBV_QPS_INIT, IBV_QPS_RTS, kRts));
  CHECK_FALSE(qp_transition_allowed(IBV_QPS_RTS, IBV_QPS_RTR, kRtr));
  CHECK_FALSE(qp_transition_allowed(IBV_QPS_RTS, IBV_QPS_SQD, IBV_QP_STATE));
  CHECK_FALSE(qp_transition_allowed(IBV_QPS_ERR, IBV_QPS_RTS, kRts));
}

TEST_CASE("any state goes to RESET or ERR with nothing else said") {
  for (ibv_qp_state from : {IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPS_ERR}) {
    CHECK(qp_transition_allowed(from, IBV_QPS_ERR, IBV_QP_STATE));
    CHECK(qp_transition_allowed(from, IBV_QPS_RESET, IBV_QP_STATE));
    CHECK_FALSE(qp_transition_allowed(from, IBV_QPS_ERR, IBV_QP_STATE | IBV_QP_PORT));
  }
}

TEST_CASE("a mask without IBV_QP_STATE modifies the current state's attributes") {
  CHECK(qp_transition_allowed(IBV_QPS_INIT, IBV_QPS_INIT, IBV_QP_ACCESS_FLAGS));
  CHECK(qp_transition_allowed(IBV_QPS_RTS, IBV_QPS_RESET, IBV_QP_MIN_RNR_TIMER));
  CHECK_FALSE(qp_transition_allowed(IBV_QPS_RTR, IBV_QPS_RTR, IBV_QP_ACCESS_FLAGS));
}

}  // namespace
}  // namespace ernic::verbs
