#pragma once

#include "engine/verbs.h"

namespace ernic::emu {

// The completion a send work request of this opcode produces.
inline WcOpcode completion_opcode(SendOpcode op) {
  switch (op) {
    case SendOpcode::kSend:
    case SendOpcode::kSendWithImm:
      return WcOpcode::kSend;
    case SendOpcode::kRdmaWrite:
    case SendOpcode::kRdmaWriteWithImm:
      return WcOpcode::kRdmaWrite;
    case SendOpcode::kRdmaRead:
      return WcOpcode::kRdmaRead;
  }
  return WcOpcode::kSend;
}

}  // namespace ernic::emu
