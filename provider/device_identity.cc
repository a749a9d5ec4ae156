#include "device_identity.h"

#include <endian.h>

#include <cstdio>
#include <cstring>

#include "frontend/shm_protocol.h"
#include "frontend/verbs_device.h"

namespace ernic::verbs {

void describe_device(const InstanceChannel::Identity& identity, ibv_device_attr_ex& attr) {
  namespace device = emu::verbs_device;
  const auto& limits = emu::shm::kDeviceLimits;
  attr = {};
  ibv_device_attr& a = attr.orig_attr;
  std::snprintf(a.fw_ver, sizeof a.fw_ver, "%s", device::kFirmware);
  a.node_guid = htobe64(device::node_guid(identity.mac));
  a.sys_image_guid = a.node_guid;
  a.max_mr_size = limits.max_mr_size;
  a.page_size_cap = 4096;
  a.vendor_id = device::kVendor;
  a.vendor_part_id = device::kDevice;
  a.max_qp = static_cast<int>(limits.max_qp);
  a.max_qp_wr = kMaxQpWr;
  a.device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_PORT_ACTIVE_EVENT;
  a.max_sge = kMaxSge;
  a.max_sge_rd = kMaxSge;
  a.max_cq = static_cast<int>(limits.max_cq);
  a.max_cqe = kMaxCqe;
  a.max_mr = static_cast<int>(limits.max_mr);
  a.max_pd = static_cast<int>(limits.max_pd);
  a.max_qp_rd_atom = kMaxRdAtomic;
  a.max_qp_init_rd_atom = kMaxRdAtomic;
  a.max_res_rd_atom = kMaxRdAtomic * a.max_qp;
  a.atomic_cap = IBV_ATOMIC_NONE;
  a.max_pkeys = 1;
  a.local_ca_ack_delay = 15;
  a.phys_port_cnt = 1;
}

void describe_port(const InstanceChannel::Identity& identity, ibv_port_attr& attr) {
  attr = {};
  attr.state = IBV_PORT_ACTIVE;
  attr.max_mtu = IBV_MTU_4096;
  attr.active_mtu = IBV_MTU_4096;
  attr.gid_tbl_len = static_cast<int>(identity.gids.size());
  attr.max_msg_sz = 1u << 31;
  attr.pkey_tbl_len = 1;
  attr.active_width = 2;   // 4X
  attr.active_speed = 32;  // EDR: 4X EDR is 100 Gb/s
  attr.phys_state = 5;     // LinkUp
  attr.link_layer = IBV_LINK_LAYER_ETHERNET;
}

}  // namespace ernic::verbs
