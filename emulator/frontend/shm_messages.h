#pragma once

#include <chrono>
#include <cstdint>

#include "engine/verbs.h"
#include "engine/wire.h"

// The bodies of the front end's control requests that more than one client writes (the load
// generator's ShmClient and the verbs provider), each in one place; ShmFrontEnd reads them.
namespace ernic::emu::shm {

inline ByteWriter modify_qp_request(std::uint32_t qpn, const QpAttributes& a) {
  ByteWriter w;
  w.u32(qpn);
  w.u8(static_cast<std::uint8_t>(a.state));
  w.u32(a.access);
  w.str(a.remote_gid);
  w.u32(a.remote_qpn);
  w.u8(a.rnr_retry);
  w.u32(static_cast<std::uint32_t>(a.rnr_delay.count()));
  return w;
}

}  // namespace ernic::emu::shm
