#pragma once

// The ERNIC verbs provider's objects: what libibverbs hands back to the program (a device, a
// context, PDs, MRs, CQs, QPs), each wrapping libibverbs' own struct first so that libibverbs
// and the program's inline verbs (ibv_post_send, ibv_poll_cq, ibv_wr_*) find their fields.

#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/verbs.h"
#include "frontend/shm_protocol.h"
#include "instance_channel.h"
#include "rdma_core_abi.h"
#include "shared_pages.h"

namespace ernic::verbs {

// The device as its verbs sysfs folder describes it.
struct Device {
  verbs_device base;  // first
  std::string socket_path;
  std::string region_path;  // a guest region, when the folder names one
};

struct Cq;
struct Qp;
struct SendRequest;

// One ibv_open_device(): one attachment to the instance.
struct ContextState {
  InstanceChannel channel;
  InstanceChannel::Identity identity;
  SharedPages pages{channel};
  std::mutex control;  // the socket and the objects' maps
  std::mutex data;     // the submit ring and the completions sorted out of the ring
  std::unordered_map<std::uint32_t, Cq*> cqs;  // by the instance's handle
  std::unordered_map<std::uint32_t, Qp*> qps;  // by QP number
  bool instance_lost = false;
  unsigned empty_polls = 0;
  std::uint32_t polls = 0;  // every ibv_poll_cq, for shm::ClientPresence
  int async_fd = -1;
};

struct Context {
  verbs_context base;  // libibverbs allocates Context and sets base up
  ContextState* state;
};

struct Pd {
  ibv_pd base;
  std::uint32_t handle;
};

struct Mr {
  verbs_mr base;
  std::uint32_t region;  // SharedPages' reference
};

struct Cq {
  verbs_cq base;
  std::uint32_t handle;
  int depth;
  std::uint64_t taken = 0;  // completions the program polled (ibv_req_notify_cq tells the instance)
  std::deque<emu::shm::CompletionEntry> ready;  // sorted out of the ring, not yet polled
};

// A work queue's requests in order: the instance completes them in order, so a completion
// retires every request posted before it (as a NIC's CQE retires the WQEs before it).
struct WorkQueue {
  std::vector<std::uint64_t> wr_ids;  // the program's, by sequence modulo the size
  std::uint64_t posted = 0;
  std::uint64_t retired = 0;
  std::uint32_t depth = 0;  // what the program asked for (max_*_wr)
  std::uint64_t outstanding() const { return posted - retired; }
};

struct InlineBuffer {
  std::byte* data = nullptr;  // depth slots of max_inline_data bytes, in memory the instance maps
  std::uint32_t slot_size = 0;
  std::uint32_t lkey = 0;
  std::uint32_t region = 0;
};

// One send-queue request as the program described it, through ibv_post_send's work request or
// the ibv_wr_* calls: checked against the QP's state and capabilities, then queued.
struct SendRequest {
  std::uint64_t wr_id = 0;
  emu::SendOpcode opcode = emu::SendOpcode::kSend;
  std::uint64_t addr = 0;
  std::uint32_t length = 0;
  std::uint32_t lkey = 0;
  std::uint64_t remote_addr = 0;
  std::uint32_t rkey = 0;
  std::uint32_t imm = 0;  // network order, as the program gave it
  bool signaled = false;
  // ibv_post_send's inline payload, copied into the QP's inline slot when the request is queued
  // (the program may reuse its buffers once the post returns).
  const ibv_sge* inline_sges = nullptr;
  int inline_count = 0;
  bool is_inline = false;

  // Fills this from ibv_post_send's request; EINVAL for what the device does not serve.
  int from_work_request(const Qp& qp, const ibv_send_wr& wr);
  void copy_inline(std::byte* to) const;
};

struct Qp {
  verbs_qp base;
  Context* context;
  ibv_qp_cap cap;
  bool signal_all;
  ibv_qp_attr attributes{};  // as the program last set them (ibv_query_qp)
  WorkQueue send;
  WorkQueue recv;
  InlineBuffer inline_buffer;
  // The ibv_wr_* API builds requests between wr_start and wr_complete.
  std::vector<SendRequest> building;
  int build_error = 0;
};

inline ContextState& state_of(ibv_context* context) {
  return *reinterpret_cast<Context*>(reinterpret_cast<char*>(context) -
                                     offsetof(Context, base.context))
              ->state;
}

// Tags the instance's wr_id with the queue it belongs to (bit 63) and the request's sequence.
inline constexpr std::uint64_t kReceiveTag = std::uint64_t{1} << 63;

// verbs_resources.cc
ibv_pd* alloc_pd(ibv_context* context);
int dealloc_pd(ibv_pd* pd);
ibv_mr* reg_mr(ibv_pd* pd, void* addr, size_t length, uint64_t iova, int access);
int dereg_mr(verbs_mr* mr);
ibv_cq* create_cq(ibv_context* context, int cqe, ibv_comp_channel* channel, int vector);
int destroy_cq(ibv_cq* cq);
ibv_qp* create_qp(ibv_pd* pd, ibv_qp_init_attr* attr);
ibv_qp* create_qp_ex(ibv_context* context, ibv_qp_init_attr_ex* attr);
int destroy_qp(ibv_qp* qp);
// qp_verbs.cc
int modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask);
int query_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask, ibv_qp_init_attr* init);
// data_path.cc
int post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad);
int post_recv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad);
int poll_cq(ibv_cq* cq, int entries, ibv_wc* wc);
void install_wr_api(Qp& qp);
// The error the provider reports on stderr when RDMAV_DEBUG or ERNIC_VERBS_DEBUG asks for it.
void debug(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace ernic::verbs
