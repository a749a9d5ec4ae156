#pragma once

#include <infiniband/verbs.h>

namespace ernic::verbs {

// Whether ibv_modify_qp may take an RC queue pair from `current` to `next` with `mask`: the
// attributes each transition requires and those it allows, as InfiniBand's QP state table
// (and the kernel's ib_modify_qp_is_ok) has them. A mask without IBV_QP_STATE modifies
// attributes in the current state. SQD and SQE are not served.
bool qp_transition_allowed(ibv_qp_state current, ibv_qp_state next, int mask);

}  // namespace ernic::verbs
