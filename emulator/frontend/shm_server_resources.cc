// The front end's resources: memory, protection domains, memory regions, completion queues and
// queue pairs, each created for one client and counted against the device's limits.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "frontend/shm_server.h"
#include "frontend/shm_server_request.h"

namespace ernic::emu {
namespace {

// Registering a memory region makes its pages ready for the data path now, as ibv_reg_mr pins
// them and fills the NIC's translation table, rather than on the first access of each page in the
// middle of a transfer. In the PVM guests this project runs on, a page's first access through a
// new mapping costs a guest page fault and then a trap to the hypervisor (its shadow page table),
// about 10 us a page together: 20 ms for the first WRITE into 8 MiB, a quarter of a short 8 MiB
// bandwidth test (docs/emulator-performance-log.md, "Copy turns and page faults").
// MADV_POPULATE_WRITE fills the guest's page table (writable, so later writes do not trap either),
// a read of each page the hypervisor's; neither changes the client's data. Bounded, so that a huge
// registration does not hold the event loop for seconds: the rest of such a region faults in as
// before.
constexpr std::uint64_t kPrefaultedBytes = 256u << 20;

void prefault(std::byte* start, std::uint64_t length) {
  length = std::min(length, kPrefaultedBytes);
  if (length == 0) {
    return;
  }
  const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<std::uintptr_t>(start);
  const auto first = begin & ~(page - 1);
  // Best effort: a kernel before 5.14 has no MADV_POPULATE_WRITE, and the reads fault as before.
  madvise(reinterpret_cast<void*>(first), begin + length - first, MADV_POPULATE_WRITE);
  for (std::uintptr_t p = first; p < begin + length; p += page) {
    const std::uintptr_t inside = std::max(p, begin);
    (void)*reinterpret_cast<const volatile std::byte*>(inside);
  }
}

}  // namespace

template <typename Set>
void ShmFrontEnd::require_room(Set Client::*resource, std::uint64_t limit, const char* what) const {
  std::uint64_t used = 0;
  for (const auto& [fd, client] : clients_) {
    used += ((*client).*resource).size();
  }
  if (used >= limit) {
    throw VerbsError(
        fmt::format("the device has no room for more {} (its limit is {})", what, limit), ENOMEM);
  }
}

void ShmFrontEnd::handle_register_memory(Client& c, Request& request) {
  const std::uint64_t size = request.in.u64();
  if (c.slot >= 0) {
    // A guest's memory cannot come as a memfd: it is given out of the region's heap, and the
    // program moves its pages there (answer: the memory's id and its offset in the region).
    if (size == 0 || size > shm::kDeviceLimits.max_mr_size) {
      throw VerbsError("register memory needs a size");
    }
    const auto offset = guest_region_->allocate(size);
    if (!offset) {
      throw VerbsError(fmt::format("the guest region {} has no {} bytes left for registered "
                                   "memory ({} of {} in use)",
                                   guest_region_->path(), size, guest_region_->heap_in_use(),
                                   guest_region_->header().heap_size),
                       ENOMEM);
    }
    const std::uint32_t id = c.next_region++;
    const Region& region =
        c.regions[id] = {guest_region_->base() + *offset, size, -1, next_shared_id_++, true};
    regions_by_base_[region.base] = &region;
    request.out.u32(id);
    request.out.u64(*offset);
    return;
  }
  if (request.fds.size() != 1 || size == 0) {
    throw VerbsError("register memory needs one memfd and a size");
  }
  struct stat st {};
  if (fstat(request.fds[0], &st) != 0 || static_cast<std::uint64_t>(st.st_size) < size) {
    throw VerbsError("the memory file is smaller than the size given");
  }
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, request.fds[0], 0);
  if (p == MAP_FAILED) {
    throw VerbsError(std::string("cannot map client memory: ") + std::strerror(errno));
  }
  const int kept = fcntl(request.fds[0], F_DUPFD_CLOEXEC, 0);
  const std::uint32_t id = c.next_region++;
  const Region& region =
      c.regions[id] = {static_cast<std::byte*>(p), size, kept, next_shared_id_++};
  regions_by_base_[region.base] = &region;
  request.out.u32(id);
}

void ShmFrontEnd::handle_alloc_pd(Client& c, Request& request) {
  require_room(&Client::pds, shm::kDeviceLimits.max_pd, "protection domains");
  const auto pd = engine_.alloc_pd();
  c.pds.insert(pd);
  request.out.u32(pd);
}

void ShmFrontEnd::handle_register_mr(Client& c, Request& request) {
  const std::uint32_t pd = request.in.u32();
  const std::uint32_t region = request.in.u32();
  const std::uint64_t offset = request.in.u64();
  const std::uint64_t length = request.in.u64();
  const std::uint64_t iova = request.in.u64();
  const std::uint32_t access = request.in.u32();
  auto it = c.regions.find(region);
  if (!c.pds.contains(pd) || it == c.regions.end()) {
    throw VerbsError("unknown protection domain or memory");
  }
  if (offset > it->second.size || length > it->second.size - offset) {
    throw VerbsError("memory region outside the registered memory");
  }
  if (length > shm::kDeviceLimits.max_mr_size) {
    throw VerbsError("memory region larger than the device's max_mr_size");
  }
  require_room(&Client::mrs, shm::kDeviceLimits.max_mr, "memory regions");
  const auto keys = engine_.reg_mr(pd, it->second.base + offset, iova, length, access);
  prefault(it->second.base + offset, length);
  c.mrs.insert(keys.lkey);
  request.out.u32(keys.lkey);
  request.out.u32(keys.rkey);
}

void ShmFrontEnd::handle_deregister_mr(Client& c, Request& request) {
  const std::uint32_t key = request.in.u32();
  if (!c.mrs.contains(key)) {
    throw VerbsError("unknown memory key");
  }
  engine_.dereg_mr(key);
  c.mrs.erase(key);
}

void ShmFrontEnd::handle_create_cq(Client& c, Request& request) {
  require_room(&Client::cqs, shm::kDeviceLimits.max_cq, "completion queues");
  // A CQ with a completion channel: the channel's write end, and what its events carry (the
  // program's ibv_cq, as the kernel's cq_handle).
  std::optional<ChannelEvents> channel;
  if (request.fds.size() == 1) {
    const int kept = fcntl(request.fds[0], F_DUPFD_CLOEXEC, 0);
    if (kept < 0) {
      throw VerbsError(std::string("cannot keep the completion channel: ") + std::strerror(errno),
                       ENOMEM);
    }
    channel = ChannelEvents{kept, request.in.u64(), false};
  }
  const auto cq = engine_.create_cq();
  c.cqs.insert(cq);
  if (channel) {
    c.channels[cq] = *channel;
  }
  cq_owner_[cq] = &c;
  engine_.set_completion_handler(
      cq, [this, &c, cq](const Completion& completion) { push_completion(c, cq, completion); });
  request.out.u32(cq);
}

void ShmFrontEnd::handle_create_qp(Client& c, Request& request) {
  const std::uint32_t pd = request.in.u32();
  const std::uint32_t send_cq = request.in.u32();
  const std::uint32_t recv_cq = request.in.u32();
  if (!c.pds.contains(pd) || !c.cqs.contains(send_cq) || !c.cqs.contains(recv_cq)) {
    throw VerbsError("unknown protection domain or completion queue");
  }
  require_room(&Client::qps, shm::kDeviceLimits.max_qp, "queue pairs");
  const auto qpn = engine_.create_qp(pd, send_cq, recv_cq);
  c.qps.insert(qpn);
  request.out.u32(qpn);
}

void ShmFrontEnd::handle_modify_qp(Client& c, Request& request) {
  const std::uint32_t qpn = request.in.u32();
  QpAttributes a;
  a.state = static_cast<QpState>(request.in.u8());
  a.access = request.in.u32();
  a.remote_gid = request.in.str();
  a.remote_qpn = request.in.u32();
  a.rnr_retry = request.in.u8();
  a.rnr_delay = std::chrono::microseconds(request.in.u32());
  if (!c.qps.contains(qpn) || a.state > QpState::kError) {
    throw VerbsError("unknown queue pair or state");
  }
  engine_.modify_qp(qpn, a);
}

void ShmFrontEnd::handle_destroy_qp(Client& c, Request& request) {
  const std::uint32_t qpn = request.in.u32();
  if (!c.qps.contains(qpn)) {
    throw VerbsError("unknown queue pair");
  }
  engine_.destroy_qp(qpn);
  c.qps.erase(qpn);
}

void ShmFrontEnd::handle_release_memory(Client& c, Request& request) {
  auto it = c.regions.find(request.in.u32());
  if (it == c.regions.end()) {
    throw VerbsError("unknown memory");
  }
  release(it->second);
  c.regions.erase(it);
}

void ShmFrontEnd::handle_dealloc_pd(Client& c, Request& request) {
  const std::uint32_t pd = request.in.u32();
  if (!c.pds.contains(pd)) {
    throw VerbsError("unknown protection domain");
  }
  engine_.dealloc_pd(pd);  // EBUSY while a QP or MR uses it
  c.pds.erase(pd);
}

void ShmFrontEnd::handle_destroy_cq(Client& c, Request& request) {
  const std::uint32_t cq = request.in.u32();
  if (!c.cqs.contains(cq)) {
    throw VerbsError("unknown completion queue");
  }
  engine_.destroy_cq(cq);  // EBUSY while a QP uses it
  c.cqs.erase(cq);
  if (auto channel = c.channels.find(cq); channel != c.channels.end()) {
    close(channel->second.fd);
    c.channels.erase(channel);
  }
  cq_owner_.erase(cq);
}

void ShmFrontEnd::release(const Region& region) {
  // The mesh may still be writing a frame from this memory or reading one into it.
  engine_.release_memory(region.base, region.size);
  regions_by_base_.erase(region.base);
  if (region.in_guest_heap) {
    guest_region_->free(static_cast<std::uint64_t>(region.base - guest_region_->base()));
    return;
  }
  munmap(region.base, region.size);
  if (region.fd >= 0) {
    close(region.fd);
  }
}

}  // namespace ernic::emu
