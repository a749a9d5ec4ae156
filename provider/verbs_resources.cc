// Creating and destroying the objects a verbs program holds: each is created at the instance
// (which owns the device's resources and counts them against its limits) and mirrored here.
#include <dlfcn.h>
#include <linux/capability.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <new>

#include "device_identity.h"
#include "engine/wire.h"
#include "provider.h"

namespace ernic::verbs {
namespace {

template <typename Object>
Object* object_of(void* base) {
  return reinterpret_cast<Object*>(base);
}

// A call whose answer is one u32 (a handle, a QP number); 0 and errno set when it fails.
std::uint32_t call_for_handle(ContextState& state, emu::shm::Op op, const emu::ByteWriter& body) {
  std::vector<std::byte> answer;
  if (const int error = state.channel.call(op, body.bytes(), {}, &answer); error != 0) {
    debug("%s", state.channel.last_error().c_str());
    errno = error;
    return 0;
  }
  return emu::ByteReader(answer).u32();
}

int call_plain(ContextState& state, emu::shm::Op op, std::uint32_t handle) {
  emu::ByteWriter w;
  w.u32(handle);
  const int error = state.channel.call(op, w.bytes());
  if (error != 0) {
    debug("%s", state.channel.last_error().c_str());
  }
  return error;
}

// Whether the process may lock memory at will: CAP_IPC_LOCK in its effective set, as the
// kernel's ib_umem_get asks (root has it, unless it was dropped).
bool may_lock_any_memory() {
  __user_cap_header_struct header{.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (syscall(SYS_capget, &header, data) != 0) {
    return false;
  }
  return (data[CAP_IPC_LOCK / 32].effective & (1U << (CAP_IPC_LOCK % 32))) != 0;
}

// What ibv_reg_mr pins counts against RLIMIT_MEMLOCK unless the process may lock memory at
// will: the kernel answers ENOMEM beyond it, and so does this.
bool within_memlock_limit(std::size_t pinned) {
  rlimit limit{};
  return getrlimit(RLIMIT_MEMLOCK, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY ||
         pinned <= limit.rlim_cur || may_lock_any_memory();
}

constexpr int kSupportedAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
                                 IBV_ACCESS_RELAXED_ORDERING;

std::size_t pinned_bytes = 0;  // by every context of this process, as the kernel counts

int register_at_instance(ContextState& state, std::uint32_t pd, const SharedPages::Share& share,
                         std::size_t length, std::uint64_t iova, int access,
                         emu::MemoryKeys& keys) {
  emu::ByteWriter w;
  w.u32(pd);
  w.u32(share.region);
  w.u64(share.offset);
  w.u64(length);
  w.u64(iova);
  w.u32(static_cast<std::uint32_t>(access) &
        (emu::kAccessLocalWrite | emu::kAccessRemoteWrite | emu::kAccessRemoteRead));
  std::vector<std::byte> answer;
  if (const int error = state.channel.call(emu::shm::Op::kRegisterMr, w.bytes(), {}, &answer);
      error != 0) {
    debug("ibv_reg_mr: %s", state.channel.last_error().c_str());
    return error;
  }
  emu::ByteReader r(answer);
  keys.lkey = r.u32();
  keys.rkey = r.u32();
  return 0;
}

// libernic-cdev.so made the program's completion channels; it keeps their write ends.
int completion_channel_writer(int channel_fd) {
  using Lookup = int (*)(int);
  static const auto lookup =
      reinterpret_cast<Lookup>(dlsym(RTLD_DEFAULT, "ernic_comp_channel_writer"));
  return lookup == nullptr ? -1 : lookup(channel_fd);
}

}  // namespace

ibv_pd* alloc_pd(ibv_context* context) {
  ContextState& state = state_of(context);
  std::lock_guard lock(state.control);
  const std::uint32_t handle = call_for_handle(state, emu::shm::Op::kAllocPd, {});
  if (handle == 0) {
    return nullptr;
  }
  auto* pd = new Pd{};
  pd->base.context = context;
  pd->base.handle = handle;
  pd->handle = handle;
  return &pd->base;
}

int dealloc_pd(ibv_pd* ibv) {
  auto* pd = object_of<Pd>(ibv);
  ContextState& state = state_of(ibv->context);
  std::lock_guard lock(state.control);
  if (const int error = call_plain(state, emu::shm::Op::kDeallocPd, pd->handle); error != 0) {
    return error;
  }
  delete pd;
  return 0;
}

ibv_mr* reg_mr(ibv_pd* ibv, void* addr, size_t length, uint64_t iova, int access) {
  ContextState& state = state_of(ibv->context);
  const bool remote_write_without_local =
      (access & IBV_ACCESS_REMOTE_WRITE) != 0 && (access & IBV_ACCESS_LOCAL_WRITE) == 0;
  if ((access & ~kSupportedAccess) != 0 || remote_write_without_local || length == 0 ||
      length > emu::shm::kDeviceLimits.max_mr_size) {
    errno = (access & IBV_ACCESS_ON_DEMAND) != 0 ? EOPNOTSUPP : EINVAL;
    return nullptr;
  }
  std::lock_guard lock(state.control);
  if (!within_memlock_limit(pinned_bytes + length)) {
    errno = ENOMEM;
    return nullptr;
  }
  SharedPages::Share share;
  std::string why;
  if (const int error = state.pages.acquire(addr, length, share, why); error != 0) {
    debug("ibv_reg_mr(%p, %zu): %s", addr, length, why.c_str());
    errno = error;
    return nullptr;
  }
  emu::MemoryKeys keys;
  const int error =
      register_at_instance(state, object_of<Pd>(ibv)->handle, share, length, iova, access, keys);
  if (error != 0) {
    state.pages.release(share.region);
    errno = error;
    return nullptr;
  }
  pinned_bytes += length;
  auto* mr = new Mr{};
  mr->region = share.region;
  mr->base.access = access;
  mr->base.mr_type = IBV_MR_TYPE_MR;
  ibv_mr& m = mr->base.ibv_mr;
  m.context = ibv->context;
  m.pd = ibv;
  m.addr = addr;
  m.length = length;
  m.handle = keys.lkey;
  m.lkey = keys.lkey;
  m.rkey = keys.rkey;
  return &m;
}

int dereg_mr(verbs_mr* vmr) {
  auto* mr = object_of<Mr>(vmr);
  ContextState& state = state_of(vmr->ibv_mr.context);
  std::lock_guard lock(state.control);
  const int error = call_plain(state, emu::shm::Op::kDeregisterMr, vmr->ibv_mr.lkey);
  if (error != 0 && error != ENODEV) {
    return error;
  }
  state.pages.release(mr->region);
  pinned_bytes -= vmr->ibv_mr.length;
  delete mr;
  return 0;
}

ibv_cq* create_cq(ibv_context* context, int cqe, ibv_comp_channel* channel, int vector) {
  if (cqe < 1 || cqe > kMaxCqe || vector < 0 || vector >= context->num_comp_vectors) {
    errno = EINVAL;
    return nullptr;
  }
  auto* cq = new Cq{};
  emu::ByteWriter body;
  std::vector<int> fds;
  if (channel != nullptr) {
    // The channel's write end goes to the instance, which writes this CQ's events into it.
    const int writer = completion_channel_writer(channel->fd);
    if (writer < 0) {
      delete cq;
      errno = EOPNOTSUPP;  // a channel libernic-cdev.so did not make
      return nullptr;
    }
    body.u64(reinterpret_cast<std::uint64_t>(&cq->base.cq));
    fds.push_back(writer);
  }
  ContextState& state = state_of(context);
  std::lock_guard lock(state.control);
  std::vector<std::byte> answer;
  if (const int error = state.channel.call(emu::shm::Op::kCreateCq, body.bytes(), fds, &answer);
      error != 0) {
    debug("ibv_create_cq: %s", state.channel.last_error().c_str());
    delete cq;
    errno = error;
    return nullptr;
  }
  const std::uint32_t handle = emu::ByteReader(answer).u32();
  cq->handle = handle;
  cq->depth = cqe;
  cq->base.cq.context = context;
  cq->base.cq.cqe = cqe;
  cq->base.cq.handle = handle;
  std::lock_guard data(state.data);
  state.cqs[handle] = cq;
  return &cq->base.cq;
}

int destroy_cq(ibv_cq* ibv) {
  auto* cq = object_of<Cq>(ibv);
  ContextState& state = state_of(ibv->context);
  std::lock_guard lock(state.control);
  if (const int error = call_plain(state, emu::shm::Op::kDestroyCq, cq->handle);
      error != 0 && error != ENODEV) {
    return error;
  }
  std::lock_guard data(state.data);
  state.cqs.erase(cq->handle);
  delete cq;
  return 0;
}

}  // namespace ernic::verbs
