// The stream of a local connection in shared memory. On this project's VMs a system call costs
// about a microsecond, and over a socket every frame costs its sender a write and its receiver
// a read or two: small messages' bandwidth was bound by them (send_bw 4 KiB goes 1.9-3.1 times
// as fast through the ring; docs/emulator-performance-log.md, "The mesh's ring"). Once a local
// connection is established, each side whose peer reads rings sends kRing as the last frame on the
// socket, with a ByteRing's memfd and two eventfds, and writes the rest of its stream into the
// ring. Framing, lanes, the copy window and payloads by reference are unchanged above it: they see
// the same byte stream.
//
// The socket stays: its end of stream is still how a peer's death is seen, and descriptors
// (kShareMemory's memfds) still go over it, each with a one-byte marker sent before the bytes of
// its frame go into the ring; the ring counts them, so the reader takes them off the socket
// before it reads the frame they belong to. The writer passes none before the reader attached:
// until then the reader may still be reading the socket up to kRing.
//
// Wake-ups cost system calls only when the other side blocks: the reader says so in the ring
// before its event loop sleeps (rings_may_sleep), the writer when the ring is full.

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <fcntl.h>

#include <cerrno>
#include <vector>

#include "frontend/fd_passing.h"
#include "mesh/mesh_connection.h"

namespace ernic::emu {
namespace {

using mesh_detail::RingEnd;

void notify(int eventfd_fd) {
  const std::uint64_t one = 1;
  // EAGAIN only when the counter is near overflow: it is readable then anyway.
  [[maybe_unused]] const ssize_t n = write(eventfd_fd, &one, sizeof one);
}

void drain(int eventfd_fd) {
  std::uint64_t count = 0;
  [[maybe_unused]] const ssize_t n = read(eventfd_fd, &count, sizeof count);
}

int new_eventfd() {
  return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

}  // namespace

void MeshFabric::offer_ring(Connection& c) {
  c.ring_offered = true;
  if (!c.local || !c.peer_reads_rings || !config_.local_rings) {
    return;
  }
  auto ring = ByteRing::create();
  const int data_fd = new_eventfd();  // the peer waits on it; we ring it
  const int room_fd = new_eventfd();  // we wait on it; the peer rings it
  std::vector<int> passed;
  for (int fd : {ring ? ring->fd() : -1, data_fd, room_fd}) {
    const int copy = fd < 0 ? -1 : fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (copy >= 0) {
      passed.push_back(copy);
    }
  }
  auto fds = std::make_shared<const mesh_detail::PassedFds>(std::move(passed));
  auto end = std::make_unique<RingEnd>(std::move(ring), room_fd, data_fd);
  if (fds->fds.size() != 3) {
    log_.warn("mesh: no ring for the connection to {} (it stays on the socket): {}", c.label,
              mesh_detail::errno_text());
    return;
  }
  loop_.add_fd(room_fd, EPOLLIN, [this, &c](std::uint32_t) {
    drain(c.ring_out->wait_fd);
    if (c.waiting_for_room && c.phase != Connection::Phase::kClosed) {
      c.waiting_for_room = false;
      write_some(c);
    }
  });
  c.ring_out = std::move(end);
  ByteWriter body;
  body.u64(ByteRing::kCapacity);
  send_control(c, static_cast<std::uint8_t>(FrameOp::kRing), body.bytes());
  c.control_queue.back().passed_fds = std::move(fds);
  c.control_queue.back().switches_to_ring = true;
}

bool MeshFabric::on_ring_frame(Connection& c, ByteReader& r) {
  const std::uint64_t capacity = r.u64();
  std::vector<int> fds;
  while (fds.size() < 3 && !c.received_fds.empty()) {
    fds.push_back(c.received_fds.front());
    c.received_fds.pop_front();
  }
  std::string why;
  if (r.failed() || fds.size() != 3 || !c.local || !config_.local_rings || c.ring_in) {
    why = "a ring without its files, or one this node did not ask for";
  } else if (capacity != ByteRing::kCapacity) {
    why = fmt::format("a ring of {} bytes", capacity);
  } else if (c.reader.has_work_without_input()) {
    why = "bytes on the socket after its ring";
  }
  std::unique_ptr<ByteRing> ring;
  if (why.empty()) {
    ring = ByteRing::map(fds[0], why);
  }
  if (!fds.empty()) {
    close(fds[0]);
  }
  if (!ring) {
    for (std::size_t i = 1; i < fds.size(); ++i) {
      close(fds[i]);
    }
    close_connection(c, fmt::format("closing connection to {}: {}", c.label, why));
    return false;
  }
  c.ring_in = std::make_unique<RingEnd>(std::move(ring), fds[1], fds[2]);
  c.descriptors_received = 0;
  loop_.add_fd(fds[1], EPOLLIN, [this, &c](std::uint32_t) {
    drain(c.ring_in->wait_fd);
    c.ring_in->ring->awake();
    if (c.copy_token == 0 && c.phase != Connection::Phase::kClosed) {
      on_readable(c);
    }
  });
  ++stats_.ring_streams;
  c.ring_in->ring->attach();
  notify(c.ring_in->wake_fd);  // the writer may be waiting to pass a descriptor
  return true;
}

ssize_t MeshFabric::write_ring(Connection& c, const iovec* iov, int count,
                               const std::vector<int>* fds) {
  ByteRing& out = *c.ring_out->ring;
  if (out.room() == 0 && !out.wait_for_room()) {
    errno = EAGAIN;
    return -1;
  }
  if (fds != nullptr) {
    if (!out.reader_attached()) {
      out.wait_for_room();  // attaching rings the same eventfd
      if (!out.reader_attached()) {
        errno = EAGAIN;
        return -1;
      }
    }
    const char marker = 'D';
    iovec one{const_cast<char*>(&marker), 1};
    if (send_with_fds(c.fd, &one, 1, *fds) != 1) {
      // The socket holds nothing else: full of markers, the reader is gone or broken.
      return -1;
    }
    out.count_passed_descriptor();
  }
  const std::size_t n = out.write(iov, count);
  if (out.reader_needs_waking()) {
    ++stats_.ring_wakeups;
    notify(c.ring_out->wake_fd);
  }
  return static_cast<ssize_t>(n);
}

ssize_t MeshFabric::read_ring(Connection& c, const iovec* iov, int count) {
  RingEnd& in = *c.ring_in;
  const std::int64_t available = in.ring->readable();
  if (available < 0) {
    errno = EPROTO;  // the writer broke the ring
    return -1;
  }
  if (in.ring->passed_descriptors() > c.descriptors_received) {
    receive_markers(c);
    if (in.ring->passed_descriptors() > c.descriptors_received && !in.peer_closed) {
      errno = EPROTO;  // counted before its marker was sent: not this protocol
      return -1;
    }
  }
  if (available == 0) {
    if (in.peer_closed) {
      return 0;  // after every byte it wrote
    }
    errno = EAGAIN;
    return -1;
  }
  const std::size_t n = in.ring->read(iov, count);
  if (in.ring->writer_needs_waking()) {
    notify(in.wake_fd);
  }
  return static_cast<ssize_t>(n);
}

void MeshFabric::receive_markers(Connection& c) {
  char markers[64];
  iovec iov{markers, sizeof markers};
  while (!c.ring_in->peer_closed) {
    const ssize_t n = receive(c, &iov, 1);
    if (n > 0) {
      c.descriptors_received += static_cast<std::uint64_t>(n);
    } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      c.ring_in->peer_closed = true;  // read_ring ends the stream once the ring is empty
    } else if (errno != EINTR) {
      return;
    }
  }
}

bool MeshFabric::poll_rings() {
  // on_readable() may close connections, which edits connections_: work on a copy.
  std::vector<Connection*> ready;
  for (auto& [fd, c] : connections_) {
    if (c->ring_in && c->copy_token == 0 && c->phase != Connection::Phase::kClosed) {
      c->ring_in->ring->awake();
      if (c->ring_in->ring->readable() != 0) {
        ready.push_back(c.get());
      }
    }
  }
  for (Connection* c : ready) {
    if (c->phase != Connection::Phase::kClosed) {
      on_readable(*c);
    }
  }
  return !ready.empty();
}

bool MeshFabric::rings_may_sleep() {
  bool may = true;
  for (auto& [fd, c] : connections_) {
    if (c->ring_in && c->copy_token == 0 && c->phase != Connection::Phase::kClosed) {
      may &= c->ring_in->ring->prepare_to_sleep();
    }
  }
  return may;
}

void MeshFabric::close_rings(Connection& c) {
  if (c.ring_out) {
    loop_.remove_fd(c.ring_out->wait_fd);
  }
  if (c.ring_in) {
    loop_.remove_fd(c.ring_in->wait_fd);
    --stats_.ring_streams;
  }
  // The rings themselves go with the connection: its reader may be in the middle of a frame.
}

}  // namespace ernic::emu
