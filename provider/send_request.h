#pragma once

#include <infiniband/verbs.h>

#include <cstdint>

#include "provider.h"

namespace ernic::verbs {

// Checks `request` against the QP and puts it on the submit ring; the errno ibv_post_send
// returns otherwise: EINVAL for a QP not ready to send or a request it cannot take, ENOMEM for a
// full send queue. The caller holds the context's data lock and rings the doorbell after.
int enqueue_send(Qp& qp, const SendRequest& request);
// Puts `entry` on the instance's submit ring, waiting for room while the instance drains it.
void submit(ContextState& state, const emu::shm::SubmitEntry& entry);
// The opcode an ibv_wr_opcode names; false for one the device lacks (atomics, binds, ...).
bool send_opcode(ibv_wr_opcode opcode, emu::SendOpcode& out);

}  // namespace ernic::verbs
