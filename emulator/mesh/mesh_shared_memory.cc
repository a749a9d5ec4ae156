// Payloads by reference between co-located instances. Over a local socket a large payload in
// client memory (a memfd the front end mapped) is not copied into the socket: the sender passes
// the memfd once (kShareMemory, SCM_RIGHTS), and then sends each such frame with a 16-byte
// reference (region, offset) that the peer resolves in its own mapping and copies from, straight
// into the destination. One copy per byte instead of two, and the sending instance does almost
// no work for it: as a NIC's DMA engine reads the source memory itself.
//
// It is safe because of when the source is read: before the receiver places the payload, hence
// before its ACK, hence before the sender's client sees the completion that lets it reuse the
// buffer. A client that goes away while references are queued has them turned into copies
// first; its region is then forgotten by the peer, in order after every frame that named it.
// The peer can read every byte of a shared region: peers are token-authenticated instances of
// one user on one machine, like the front end's own clients' memory is to the instance.

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "frontend/fd_passing.h"
#include "mesh/mesh_connection.h"

namespace ernic::emu {
namespace {

constexpr std::size_t kMaxPassedFds = 8;  // per read: a kShareMemory frame brings one, kRing three
constexpr std::size_t kFlagsByte = 3;     // where the flags lie in an encoded header
using mesh_detail::Bytes;

}  // namespace

void MeshFabric::send_by_reference(Connection& c, OutFrame& f) {
  if (!c.local || !c.peer_takes_references || !config_.payloads_by_reference ||
      shared_memory_ == nullptr || f.length < kByReferenceBytes || f.owned) {
    return;
  }
  const auto region = shared_memory_->find(f.payload, f.length);
  if (!region) {
    return;
  }
  if (!c.shared_out.contains(region->id)) {
    const int copy = fcntl(region->fd, F_DUPFD_CLOEXEC, 0);
    if (copy < 0) {
      return;  // out of descriptors: this frame goes by value
    }
    ByteWriter share;
    share.u64(region->id);
    share.u64(region->size);
    // Control frames are ordered onto the wire before data queued at the same time: the peer
    // has the mapping before the first reference to it.
    send_control(c, static_cast<std::uint8_t>(FrameOp::kShareMemory), share.bytes());
    c.control_queue.back().passed_fds =
        std::make_shared<const mesh_detail::PassedFds>(std::vector<int>{copy});
    c.control_queue.back().shared_region = region->id;
    c.shared_out.insert(region->id);
    shared_regions_[region->id] = {region->base, region->size};
  }
  ByteWriter reference;
  reference.u64(region->id);
  reference.u64(static_cast<std::uint64_t>(f.payload - region->base));
  f.source = f.payload;
  f.referenced = f.length;
  f.owned = std::make_shared<Bytes>(reference.bytes());
  f.payload = f.owned->data();
  f.length = static_cast<std::uint32_t>(f.owned->size());
  f.header[kFlagsByte] |= static_cast<std::byte>(kFlagByReference);
  stats_.bytes_by_reference += f.referenced;
}

bool MeshFabric::on_shared_memory_frame(Connection& c, FrameOp op, ByteReader& r) {
  if (op == FrameOp::kCopied) {
    const std::uint64_t placed = r.u64();
    if (r.failed() || placed > c.referenced_in_flight) {
      close_connection(c, fmt::format("closing connection to {}: it acknowledged {} bytes by "
                                      "reference with {} in flight",
                                      c.label, placed, c.referenced_in_flight));
      return false;
    }
    c.referenced_in_flight -= placed;
    if (!c.waiting_for_copies.empty()) {
      c.round_robin.insert(c.round_robin.begin(), c.waiting_for_copies.begin(),
                           c.waiting_for_copies.end());
      c.waiting_for_copies.clear();
      c.want_write = true;
    }
    return true;
  }
  const std::uint64_t id = r.u64();
  if (op == FrameOp::kForgetMemory) {
    if (auto it = c.shared_in.find(id); it != c.shared_in.end()) {
      munmap(const_cast<std::byte*>(it->second.base), it->second.size);
      c.shared_in.erase(it);
      --stats_.peer_regions;
    }
    return true;
  }
  const std::uint64_t size = r.u64();
  if (r.failed() || c.received_fds.empty() || size == 0 || !c.local) {
    close_connection(
        c, fmt::format("closing connection to {}: memory shared without its file", c.label));
    return false;
  }
  const int fd = c.received_fds.front();
  c.received_fds.pop_front();
  // A mapping longer than its file would fault (SIGBUS) where the copy reads past the end.
  struct stat file {};
  if (fstat(fd, &file) != 0 || static_cast<std::uint64_t>(file.st_size) < size) {
    close(fd);
    close_connection(c, fmt::format("closing connection to {}: shared memory of {} bytes in a "
                                    "file of {}",
                                    c.label, size, static_cast<long long>(file.st_size)));
    return false;
  }
  void* p = mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    close_connection(c, fmt::format("closing connection to {}: cannot map the memory it shared "
                                    "({} bytes): {}",
                                    c.label, size, mesh_detail::errno_text()));
    return false;
  }
  auto [it, added] = c.shared_in.try_emplace(id, Connection::PeerRegion{nullptr, 0});
  if (!added) {
    munmap(const_cast<std::byte*>(it->second.base), it->second.size);
  } else {
    ++stats_.peer_regions;
  }
  it->second = {static_cast<const std::byte*>(p), size};
  return true;
}

void MeshFabric::forget_shared_memory(const std::byte* base, std::size_t length) {
  const auto inside = [&](const std::byte* p, std::size_t n) {
    return p != nullptr && p < base + length && p + n > base;
  };
  for (auto& [fd, c] : connections_) {
    // A reference not started yet becomes a copy; one partly written is finished as it is
    // (the peer's mapping outlives the client's until the kForgetMemory below).
    const auto to_copy = [&](OutFrame& f) {
      if (f.referenced == 0 || f.written > 0 || !inside(f.source, f.referenced)) {
        return false;
      }
      f.owned = std::make_shared<Bytes>(f.source, f.referenced);
      f.payload = f.owned->data();
      f.length = f.referenced;
      f.referenced = 0;
      f.header[kFlagsByte] &= ~static_cast<std::byte>(kFlagByReference);
      return true;
    };
    for (auto& f : c->wire) {
      const std::size_t before = f.weight();
      if (to_copy(f)) {
        c->wire_bytes = c->wire_bytes - before + f.weight();
      }
    }
    for (auto& [qpn, queue] : c->qp_queues) {
      std::for_each(queue.begin(), queue.end(), to_copy);
    }
  }
  for (auto region = shared_regions_.begin(); region != shared_regions_.end();) {
    if (!inside(region->second.base, region->second.size)) {
      ++region;
      continue;
    }
    const std::uint64_t id = region->first;
    for (auto& [fd, c] : connections_) {
      if (c->shared_out.erase(id) == 0 || c->phase == Connection::Phase::kClosed) {
        continue;
      }
      std::erase_if(c->control_queue, [id](const OutFrame& f) { return f.shared_region == id; });
      // After every frame already ordered onto the wire, the last ones that may name it.
      ByteWriter w;
      w.u64(id);
      FrameHeader h;
      h.op = FrameOp::kForgetMemory;
      h.payload_length = static_cast<std::uint32_t>(w.bytes().size());
      OutFrame forget;
      forget.header = encode_header(h);
      forget.owned = std::make_shared<Bytes>(w.bytes());
      forget.payload = forget.owned->data();
      forget.length = h.payload_length;
      c->wire_bytes += forget.weight();
      c->wire.push_back(std::move(forget));
      c->want_write = true;
    }
    region = shared_regions_.erase(region);
  }
}

std::uint32_t MeshFabric::segment_size_to(NodeId node) const {
  const auto it = peers_.find(node);
  if (it == peers_.end() || !config_.payloads_by_reference || shared_memory_ == nullptr) {
    return 0;
  }
  // Data goes on the lanes when there are any (the primary may be the TCP registration).
  // Called for every message the engine segments: no allocation.
  const auto by_reference = [](const Connection* c) {
    return c->local && c->peer_takes_references;
  };
  const auto lanes = lanes_.find(node);
  const bool on_lanes = lanes != lanes_.end() && !lanes->second.empty();
  const bool by_reference_all =
      on_lanes ? std::all_of(lanes->second.begin(), lanes->second.end(), by_reference)
               : by_reference(it->second);
  return by_reference_all ? kByReferenceSegmentBytes : 0;
}

bool MeshFabric::copy_window_allows(const Connection& c, const OutFrame& f) const {
  return f.referenced == 0 || !c.peer_acknowledges_copies || c.referenced_in_flight == 0 ||
         c.referenced_in_flight + f.referenced <= mesh_detail::kCopyWindowBytes;
}

void MeshFabric::count_copied(Connection& c, std::uint32_t length) {
  c.copied_unacknowledged += length;
  if (c.copied_unacknowledged >= mesh_detail::kCopiedBatchBytes) {
    acknowledge_copies(c);
  }
}

void MeshFabric::acknowledge_copies(Connection& c) {
  if (!c.peer_acknowledges_copies) {
    c.copied_unacknowledged = 0;  // a peer that sends no window does not know the frame
    return;
  }
  ByteWriter w;
  w.u64(c.copied_unacknowledged);
  c.copied_unacknowledged = 0;
  send_control(c, static_cast<std::uint8_t>(FrameOp::kCopied), w.bytes());
}

bool MeshFabric::copy_elsewhere(Connection& c, std::byte* destination, const std::byte* source,
                                std::uint32_t length, bool streaming) {
  // A copy within one turn is cheaper in the loop than the hand-off (two wake-ups).
  if (copy_engine_ == nullptr || length <= mesh_detail::kTurnBytes) {
    return false;
  }
  c.copy_token = copy_engine_->submit(destination, source, length, streaming);
  ++stats_.copies_elsewhere;
  update_events(c);
  return true;
}

void MeshFabric::copy_done(CopyEngine::Token token, bool rescued) {
  for (auto& [fd, c] : connections_) {
    if (c->copy_token == token) {
      stats_.copies_rescued += rescued ? 1 : 0;
      c->copy_token = 0;
      c->reader.copy_finished();
      update_events(*c);
      on_readable(*c);  // delivers the frame, reads what came meanwhile
      return;
    }
  }
}

void MeshFabric::end_copy_elsewhere(Connection& c, bool finish) {
  if (finish) {
    copy_engine_->finish_here(c.copy_token);
  } else {
    copy_engine_->cancel(c.copy_token);
  }
  c.copy_token = 0;
  c.reader.copy_finished();
  if (c.phase != Connection::Phase::kClosed) {
    update_events(c);
  }
}

ssize_t MeshFabric::receive(Connection& c, const iovec* iov, int count) {
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxPassedFds)];
  msghdr msg{};
  msg.msg_iov = const_cast<iovec*>(iov);
  msg.msg_iovlen = static_cast<std::size_t>(count);
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  const ssize_t n = recvmsg(c.fd, &msg, MSG_CMSG_CLOEXEC);
  if (n < 0) {
    return n;
  }
  for (cmsghdr* h = CMSG_FIRSTHDR(&msg); h != nullptr; h = CMSG_NXTHDR(&msg, h)) {
    if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS) {
      const std::size_t fds = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (std::size_t i = 0; i < fds; ++i) {
        int fd = -1;
        std::memcpy(&fd, CMSG_DATA(h) + i * sizeof(int), sizeof fd);
        c.received_fds.push_back(fd);
      }
    }
  }
  if ((msg.msg_flags & MSG_CTRUNC) != 0) {
    errno = EPROTO;  // descriptors were lost: the kShareMemory frames would be unpaired
    return -1;
  }
  return n;
}

ssize_t MeshFabric::transmit(Connection& c, const iovec* iov, int count,
                             const std::vector<int>* fds) {
  if (c.writing_to_ring) {
    return write_ring(c, iov, count, fds);
  }
  if (fds == nullptr) {
    return writev(c.fd, iov, count);
  }
  return send_with_fds(c.fd, iov, count, *fds);
}

}  // namespace ernic::emu
