#pragma once

#include <vector>

#include "engine/wire.h"
#include "frontend/shm_server.h"

namespace ernic::emu {

// One request of a client: what follows the operation, the descriptors that came with it (closed
// after it), and what the answer carries.
struct ShmFrontEnd::Request {
  ByteReader& in;
  const std::vector<int>& fds;
  ByteWriter& out;
  std::vector<int> send_fds;
};

}  // namespace ernic::emu
