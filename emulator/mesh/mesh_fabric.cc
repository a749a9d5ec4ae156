#include "mesh/mesh_fabric.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "mesh/mesh_connection.h"

namespace ernic::emu {
namespace {

// Bytes committed to the socket order at once: what a frame of another QP queued now finds
// ahead of it at most, besides the socket's own buffers.
constexpr std::size_t kWireWindow = 256u << 10;
constexpr int kMaxIov = 64;

using mesh_detail::Bytes;
using mesh_detail::errno_text;
using mesh_detail::kTurnBytes;

}  // namespace

MeshFabric::MeshFabric(EventLoop& loop, Logger& log, MeshConfig config)
    : loop_(loop), log_(log), config_(std::move(config)) {}

MeshFabric::~MeshFabric() {
  shutdown();
}

void MeshFabric::start(std::function<void()> on_ready,
                       std::function<void(const std::string&)> on_fatal) {
  on_ready_ = std::move(on_ready);
  on_fatal_ = std::move(on_fatal);
  listen();
  resume_poller_ =
      loop_.add_poller({[this] {
                          const bool resumed = continue_reading_without_input();
                          return poll_rings() || resumed;  // both, every time
                        },
                        [this] { return !reading_without_input() && rings_may_sleep(); }});
  if (config_.payloads_by_reference && config_.copies_elsewhere) {
    copy_engine_ = std::make_unique<CopyEngine>(
        loop_, [this](CopyEngine::Token token, bool rescued) { copy_done(token, rescued); });
  }
  last_heartbeat_ = EventLoop::Clock::now();
  loop_.add_timer(last_heartbeat_ + config_.heartbeat_interval, [this] { heartbeat(); });
  if (config_.role == MeshConfig::Role::kManager) {
    node_id_ = 0;
    nodes_.push_back({0, config_.bind, listen_port_, config_.mac, config_.gids});
    for (const auto& gid : config_.gids) {
      gid_to_node_[gid] = 0;
    }
    log_.info("mesh: manager listening on {}:{} (protocol {}.{})", config_.bind, listen_port_,
              config_.version_major, config_.version_minor);
    ready_ = true;
    on_ready_();
    return;
  }
  manager_dial_deadline_ = EventLoop::Clock::now() + config_.manager_connect_timeout;
  dial_manager_attempt();
}

void MeshFabric::send_control(Connection& c, std::uint8_t op, Bytes body) {
  FrameHeader h;
  h.op = static_cast<FrameOp>(op);
  h.payload_length = static_cast<std::uint32_t>(body.size());
  Connection::OutFrame f;
  f.header = encode_header(h);
  f.owned = std::make_shared<Bytes>(std::move(body));
  f.payload = f.owned->data();
  f.length = h.payload_length;
  c.control_queue.push_back(std::move(f));
  c.want_write = true;
}

void MeshFabric::on_readable(Connection& c) {
  std::string reason;
  // A read that came back short found the socket empty: the next read of this turn would only
  // say EAGAIN, and a system call costs a microsecond in a VM, a good part of a small frame's
  // trip. What arrives meanwhile keeps the socket readable for the next turn.
  bool drained = false;
  const auto read_some = [this, &c, &drained](const iovec* iov, int count) -> ssize_t {
    if (drained) {
      errno = EAGAIN;
      return -1;
    }
    stats_.read_calls += c.ring_in ? 0 : 1;
    const ssize_t n = c.ring_in ? read_ring(c, iov, count)
                      : c.local ? receive(c, iov, count)
                                : readv(c.fd, iov, count);
    std::size_t asked = 0;
    for (int i = 0; i < count; ++i) {
      asked += iov[i].iov_len;
    }
    drained = n > 0 && static_cast<std::size_t>(n) < asked;
    return n;
  };
  const auto result = c.reader.pump(read_some, c, reason, kTurnBytes);
  const std::uint64_t turn = c.reader.bytes_read() - c.counted_rx;
  stats_.wire_bytes_received += turn;
  stats_.max_read_turn_bytes = std::max(stats_.max_read_turn_bytes, turn);
  c.counted_rx = c.reader.bytes_read();
  c.last_rx = EventLoop::Clock::now();
  if (c.copied_unacknowledged > 0 && result != FrameReader::Result::kBudgetUsed &&
      c.phase != Connection::Phase::kClosed) {
    acknowledge_copies(c);  // reading stopped: the peer need not wait for a full batch
  }
  switch (result) {
    case FrameReader::Result::kMalformed:
      ++stats_.malformed_frames;
      close_connection(c, fmt::format("closing connection to {}: {}", c.label, reason));
      return;
    case FrameReader::Result::kClosed:
      if (c.phase != Connection::Phase::kClosed) {
        close_connection(c, reason);
      }
      return;
    default:
      return;
  }
}

bool MeshFabric::reading_without_input() const {
  return std::any_of(connections_.begin(), connections_.end(), [](const auto& entry) {
    return entry.second->reader.has_work_without_input() &&
           entry.second->phase != Connection::Phase::kClosed;
  });
}

bool MeshFabric::continue_reading_without_input() {
  // on_readable() may close connections, which edits connections_: work on a copy.
  std::vector<Connection*> resumed;
  for (auto& [fd, c] : connections_) {
    if (c->reader.has_work_without_input() && c->phase != Connection::Phase::kClosed) {
      resumed.push_back(c.get());
    }
  }
  for (Connection* c : resumed) {
    if (c->phase != Connection::Phase::kClosed) {
      on_readable(*c);
    }
  }
  if (!resumed.empty()) {
    loop_.yield_between_turns();  // as after a socket's turn: the neighbours run in between
  }
  return !resumed.empty();
}

void MeshFabric::close_connection(Connection& c, const std::string& reason, bool lost) {
  if (c.phase == Connection::Phase::kClosed) {
    return;
  }
  const bool was_established = c.phase == Connection::Phase::kEstablished;
  leave_handshake(c);
  if (c.copy_token != 0) {
    end_copy_elsewhere(c, false);  // before the peer's regions it reads from are unmapped
  }
  c.phase = Connection::Phase::kClosed;
  close_rings(c);
  loop_.remove_fd(c.fd);
  close(c.fd);
  NodeId peer = c.peer;
  if (c.lane > 0) {
    close_lane(c, reason, lost, was_established);
    return;
  }
  auto it = peers_.find(peer);
  const bool owned_peer = it != peers_.end() && it->second == &c;
  if (owned_peer) {
    peers_.erase(it);
    close_lanes(peer);
  }
  if (!reason.empty()) {
    if (was_established && owned_peer) {
      log_.warn("mesh: lost node {}: {}", peer, reason);
    } else {
      log_.warn("mesh: {}", reason);
    }
  }
  if (was_established && owned_peer && lost && !shut_down_) {
    ++stats_.nodes_lost;
  }
  if (c.counted) {
    c.counted = false;
    --stats_.peers;
    if (on_peers_changed_) {
      on_peers_changed_();
    }
  }
  if (owned_peer && lost && receiver_ != nullptr && !shut_down_) {
    receiver_->peer_lost(peer);
  }
  if (owned_peer && config_.role == MeshConfig::Role::kManager && !shut_down_ && peer != 0) {
    std::erase_if(nodes_, [peer](const MeshNode& n) { return n.id == peer; });
    std::erase_if(gid_to_node_, [peer](const auto& entry) { return entry.second == peer; });
    broadcast_topology();
  }
  if (c.registering && !shut_down_ && ready_) {
    // Without the manager this worker can neither learn nor keep its place in the topology:
    // it leaves (exits), which a supervisor sees like any instance death.
    on_fatal_(fmt::format("mesh: lost the manager ({}): this worker left the mesh",
                          reason.empty() ? "closed" : reason));
  }
  if (c.registering && !ready_ && !shut_down_ && !reason.empty()) {
    // Still joining: the manager may not be up yet, so keep trying until the deadline.
    const int fd = c.fd;
    auto node = connections_.extract(fd);
    if (!node.empty()) {
      closed_.push_back(std::move(node.mapped()));
    }
    if (EventLoop::Clock::now() < manager_dial_deadline_) {
      loop_.add_timer(EventLoop::Clock::now() + std::chrono::milliseconds(100),
                      [this] { dial_manager_attempt(); });
    } else {
      on_fatal_(fmt::format("mesh: cannot join the manager at {}: {}", c.label, reason));
    }
    return;
  }
  auto node = connections_.extract(c.fd);
  if (!node.empty()) {
    closed_.push_back(std::move(node.mapped()));
  }
}

std::optional<NodeId> MeshFabric::resolve_gid(std::string_view gid) const {
  auto it = gid_to_node_.find(std::string(gid));
  if (it == gid_to_node_.end()) {
    return std::nullopt;
  }
  return it->second;
}

bool MeshFabric::reachable(NodeId node) const {
  if (node == node_id_) {
    return true;
  }
  auto it = peers_.find(node);
  return it != peers_.end() && it->second->phase != Connection::Phase::kClosed;
}

void MeshFabric::send(NodeId to, const FrameHeader& header, const std::byte* payload) {
  if (to == node_id_) {
    self_frames_.push_back({header, payload});
    return;
  }
  Connection* lane = data_connection(to, header.src_qpn, true);
  if (lane == nullptr) {
    return;  // the engine learns of the loss through peer_lost()
  }
  Connection& c = *lane;
  Connection::OutFrame f;
  f.header = encode_header(header);
  f.payload = payload;
  f.length = header.payload_length;
  f.src_qpn = header.src_qpn;
  f.data = cancellable(header, false);
  f.request = cancellable(header, true);
  f.small = header.payload_length <= kSmallFrameBytes;
  f.queued_at = c.bytes_written;
  send_by_reference(c, f);
  auto& queue = c.qp_queues[header.src_qpn];
  if (queue.empty()) {
    // A small frame of an idle QP (a latency message, an ACK) goes next rather than behind a
    // segment of every busy QP; the QP rejoins the back of the rotation after it.
    if (f.small) {
      c.round_robin.push_front(header.src_qpn);
    } else {
      c.round_robin.push_back(header.src_qpn);
    }
  }
  queue.push_back(f);
  c.want_write = true;
}

void MeshFabric::cancel(NodeId to, std::uint32_t src_qpn, bool requests_only) {
  std::erase_if(self_frames_, [&](const SelfFrame& f) {
    return to == node_id_ && f.header.src_qpn == src_qpn && cancellable(f.header, requests_only);
  });
  Connection* lane = data_connection(to, src_qpn, false);
  if (lane == nullptr) {
    return;  // not connected, or the QP sent nothing there
  }
  Connection& c = *lane;
  auto q = c.qp_queues.find(src_qpn);
  if (q != c.qp_queues.end()) {
    std::erase_if(q->second, [&](const Connection::OutFrame& f) {
      return f.data && (!requests_only || f.request);
    });
  }
  // Frames already ordered onto the wire but not started can go too; a started one must finish.
  for (auto w = c.wire.begin(); w != c.wire.end();) {
    if (w->src_qpn == src_qpn && w->data && (!requests_only || w->request) && w->written == 0 &&
        w != c.wire.begin()) {
      c.wire_bytes -= w->weight();
      w = c.wire.erase(w);
    } else {
      ++w;
    }
  }
}

void MeshFabric::release_memory(const std::byte* base, std::size_t length) {
  forget_shared_memory(base, length);
  auto inside = [&](const std::byte* p, std::size_t n) {
    return p != nullptr && n > 0 && p < base + length && p + n > base;
  };
  auto copy_out = [&](Connection::OutFrame& f) {
    if (!f.owned && inside(f.payload, f.length)) {
      f.owned = std::make_shared<Bytes>(f.payload, f.length);
      f.payload = f.owned->data();
    }
  };
  for (auto& [fd, c] : connections_) {
    for (auto& f : c->wire) {
      copy_out(f);
    }
    for (auto& [qpn, queue] : c->qp_queues) {
      for (auto& f : queue) {
        copy_out(f);
      }
    }
    if (c->copy_token != 0 && c->reader.writes_into(base, length)) {
      end_copy_elsewhere(*c, false);
    }
    c->reader.release_memory(base, length);
  }
  std::erase_if(self_frames_,
                [&](const SelfFrame& f) { return inside(f.payload, f.header.payload_length); });
}

void MeshFabric::commit_to_wire(Connection& c, bool data_allowed) {
  while (c.wire_bytes < kWireWindow) {
    if (!c.control_queue.empty()) {
      c.wire_bytes += c.control_queue.front().weight();
      c.wire.push_back(std::move(c.control_queue.front()));
      c.control_queue.pop_front();
      continue;
    }
    if (!data_allowed || c.round_robin.empty()) {
      break;
    }
    const std::uint32_t qpn = c.round_robin.front();
    c.round_robin.pop_front();
    auto& queue = c.qp_queues[qpn];
    if (queue.empty()) {
      c.qp_queues.erase(qpn);
      continue;
    }
    if (!copy_window_allows(c, queue.front())) {
      c.waiting_for_copies.push_back(qpn);  // back in the round when kCopied comes
      continue;
    }
    c.wire_bytes += queue.front().weight();
    c.wire.push_back(queue.front());
    queue.pop_front();
    if (!queue.empty()) {
      c.round_robin.push_back(qpn);
    } else {
      c.qp_queues.erase(qpn);
    }
  }
}

void MeshFabric::account_written(Connection& c, std::size_t written) {
  std::size_t left = written;
  std::uint64_t at = c.bytes_written;  // where the front frame's next byte is in the stream
  c.bytes_written += left;
  while (left > 0 && !c.wire.empty()) {
    auto& f = c.wire.front();
    if (f.written == 0 && f.small) {
      stats_.max_bytes_ahead_of_small_frame =
          std::max(stats_.max_bytes_ahead_of_small_frame, at - f.queued_at);
    }
    const std::size_t rest = f.size() - f.written;
    const std::size_t used = std::min(left, rest);
    at += used;
    left -= used;
    if (used == rest) {
      if (f.referenced > 0 && c.peer_acknowledges_copies) {
        c.referenced_in_flight += f.referenced;
        stats_.max_referenced_in_flight =
            std::max(stats_.max_referenced_in_flight, c.referenced_in_flight);
      }
      c.writing_to_ring |= f.switches_to_ring;
      c.wire_bytes -= f.weight();
      c.wire.pop_front();
    } else {
      f.written += used;
    }
  }
}

void MeshFabric::write_some(Connection& c) {
  if (c.phase == Connection::Phase::kClosed || c.phase == Connection::Phase::kConnecting) {
    return;
  }
  const bool data_allowed = c.phase == Connection::Phase::kEstablished;
  if (data_allowed && !c.ring_offered) {
    offer_ring(c);
  }
  std::size_t turn = 0;
  const auto end_turn = [&] {
    stats_.max_write_turn_bytes = std::max<std::uint64_t>(stats_.max_write_turn_bytes, turn);
  };
  while (true) {
    commit_to_wire(c, data_allowed);
    if (c.wire.empty()) {
      break;
    }
    iovec iov[kMaxIov];
    int count = 0;
    std::size_t room = kTurnBytes - std::min(turn, kTurnBytes);  // this turn's budget left
    const auto add = [&](const std::byte* p, std::size_t n) {
      n = std::min(n, room);
      iov[count++] = {const_cast<std::byte*>(p), n};
      room -= n;
    };
    OutFrame* passing = nullptr;  // a frame whose descriptor goes with this write
    for (auto& f : c.wire) {
      if (count + 2 > kMaxIov || room == 0) {
        break;
      }
      if (f.passed_fds && !f.fd_sent) {
        if (count > 0) {
          break;  // a descriptor rides on the first byte of a write of its own
        }
        passing = &f;
      }
      if (f.written < kFrameHeaderSize) {
        add(f.header.data() + f.written, kFrameHeaderSize - f.written);
      }
      if (f.length > 0 && room > 0) {
        const std::size_t done = f.written > kFrameHeaderSize ? f.written - kFrameHeaderSize : 0;
        // Straight from registered memory: the only copy is the kernel's (or the ring's).
        add(f.payload + done, f.length - done);
      }
      if (f.switches_to_ring) {
        break;  // what follows it goes into the ring
      }
    }
    const ssize_t n = transmit(c, iov, count, passing ? &passing->passed_fds->fds : nullptr);
    if (n > 0 && passing != nullptr) {
      passing->fd_sent = true;
    }
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        end_turn();
        if (c.writing_to_ring) {
          c.waiting_for_room = true;  // the reader rings the room eventfd
        } else {
          arm_epollout(c);
        }
        return;
      }
      if (errno == EINTR) {
        continue;
      }
      close_connection(c, fmt::format("write to {} failed: {}", c.label, errno_text()));
      return;
    }
    stats_.wire_bytes_sent += static_cast<std::uint64_t>(n);
    c.last_tx = EventLoop::Clock::now();
    turn += static_cast<std::size_t>(n);
    account_written(c, static_cast<std::size_t>(n));
    if (turn >= kTurnBytes &&
        (!c.wire.empty() || !c.control_queue.empty() || (data_allowed && !c.round_robin.empty()))) {
      // The rest goes on the next turn: EPOLLOUT fires at once while the socket has room.
      end_turn();
      arm_epollout(c);
      return;
    }
  }
  end_turn();
  c.want_write = false;
  if (c.epollout_armed) {
    c.epollout_armed = false;
    update_events(c);
  }
  if (c.close_after_flush) {
    close_connection(c, "", false);
  }
}

void MeshFabric::arm_epollout(Connection& c) {
  if (!c.epollout_armed) {
    c.epollout_armed = true;
    update_events(c);
  }
}

void MeshFabric::update_events(Connection& c) {
  loop_.modify_fd(c.fd, (c.copy_token == 0 ? EPOLLIN : 0u) | (c.epollout_armed ? EPOLLOUT : 0u));
}

void MeshFabric::deliver_to_self() {
  while (!self_frames_.empty() && receiver_ != nullptr) {
    const SelfFrame f = self_frames_.front();
    self_frames_.pop_front();
    const Placement p = receiver_->place(node_id_, f.header);
    if (p.destination != nullptr && f.payload != nullptr) {
      std::memmove(p.destination, f.payload, f.header.payload_length);
    }
    receiver_->delivered(node_id_, f.header);
  }
}

void MeshFabric::flush() {
  deliver_to_self();
  // A failed write closes its connection, which takes it out of connections_ (into closed_,
  // still alive): iterate over a copy.
  std::vector<Connection*> pending;
  for (auto& [fd, c] : connections_) {
    // A connection waiting for EPOLLOUT (a full socket, or the rest of a turn) goes on then.
    if (c->want_write && !c->epollout_armed && !c->waiting_for_room) {
      pending.push_back(c.get());
    }
  }
  for (Connection* c : pending) {
    write_some(*c);
  }
  closed_.clear();
}

void MeshFabric::shutdown() {
  if (shut_down_) {
    return;
  }
  shut_down_ = true;
  std::vector<Connection*> all;
  for (auto& [fd, c] : connections_) {
    all.push_back(c.get());
  }
  for (Connection* c : all) {
    close_connection(*c, "", false);
  }
  closed_.clear();
  if (resume_poller_ != 0) {
    loop_.remove_poller(resume_poller_);
    resume_poller_ = 0;
  }
  copy_engine_.reset();  // after the connections: none has a copy in it any more
  for (int* fd : {&listen_fd_, &local_listen_fd_}) {
    if (*fd >= 0) {
      loop_.remove_fd(*fd);
      close(*fd);
      *fd = -1;
    }
  }
}

}  // namespace ernic::emu
