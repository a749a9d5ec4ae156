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

#include "mesh/auth.h"
#include "mesh/frame_reader.h"

namespace ernic::emu {
namespace {

constexpr std::string_view kHandshakeMagic = "ERNIC-MESH";
constexpr std::uint32_t kCapabilities = 1;     // bit 0: segmented data frames
constexpr std::size_t kWireWindow = 1u << 20;  // bytes committed to the socket order at once
constexpr int kMaxIov = 64;

using Bytes = std::basic_string<std::byte>;

std::string errno_text() {
  return std::strerror(errno);
}

void set_socket_options(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

bool parse_ipv4(const std::string& host, sockaddr_in& addr) {
  addr = {};
  addr.sin_family = AF_INET;
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) == 1) {
    return true;
  }
  addrinfo hints{};
  hints.ai_family = AF_INET;
  addrinfo* result = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &result) != 0 || result == nullptr) {
    return false;
  }
  addr.sin_addr = reinterpret_cast<sockaddr_in*>(result->ai_addr)->sin_addr;
  freeaddrinfo(result);
  return true;
}

void write_node(ByteWriter& w, const MeshNode& n) {
  w.u32(n.id);
  w.str(n.host);
  w.u16(n.port);
  w.str(n.mac);
  w.u16(static_cast<std::uint16_t>(n.gids.size()));
  for (const auto& gid : n.gids) {
    w.str(gid);
  }
}

MeshNode read_node(ByteReader& r) {
  MeshNode n;
  n.id = r.u32();
  n.host = r.str();
  n.port = r.u16();
  n.mac = r.str();
  const std::uint16_t count = r.u16();
  for (std::uint16_t i = 0; i < count && !r.failed(); ++i) {
    n.gids.push_back(r.str());
  }
  return n;
}

}  // namespace

struct MeshFabric::Connection final : FrameReader::Sink {
  enum class Phase { kConnecting, kAwaitChallenge, kAwaitHello, kAwaitAuth, kEstablished, kClosed };
  struct OutFrame {
    EncodedHeader header;
    const std::byte* payload = nullptr;
    std::uint32_t length = 0;
    std::size_t written = 0;
    std::shared_ptr<Bytes> owned;  // control frames own their body
    std::uint32_t src_qpn = 0;
    bool data = false;     // may be cancelled
    bool request = false;  // SEND, WRITE or READ request: dropped when rewinding after RNR
    std::size_t size() const { return kFrameHeaderSize + length; }
  };

  Connection(MeshFabric& m, int f, bool d) : mesh(m), fd(f), dialer(d) {}

  Placement place(const FrameHeader& h) override {
    if (phase != Phase::kEstablished || peer == kUnassignedNode || mesh.receiver_ == nullptr) {
      return {};
    }
    accepted = true;
    return mesh.receiver_->place(peer, h);
  }
  void delivered(const FrameHeader& h) override {
    if (accepted) {
      accepted = false;
      mesh.receiver_->delivered(peer, h);
    }
  }
  bool control(const FrameHeader& h, std::span<const std::byte> body) override {
    return mesh.on_control(*this, h, body);
  }

  MeshFabric& mesh;
  int fd;
  bool dialer;
  bool registering = false;  // this is the worker's connection to the manager
  bool counted = false;      // counted in stats_.peers: uncounted exactly once when it closes
  bool close_after_flush = false;
  bool accepted = false;
  Phase phase = Phase::kConnecting;
  NodeId peer = kUnassignedNode;
  NodeId claimed_peer = kUnassignedNode;
  std::string label;
  Nonce my_nonce = random_nonce();
  Nonce peer_nonce{};
  FrameReader reader;
  std::deque<OutFrame> control_queue;
  std::map<std::uint32_t, std::deque<OutFrame>> qp_queues;
  std::deque<std::uint32_t> round_robin;
  std::deque<OutFrame> wire;
  std::size_t wire_bytes = 0;
  bool want_write = false;
  bool epollout_armed = false;
  std::uint64_t counted_rx = 0;
  EventLoop::Clock::time_point last_rx = EventLoop::Clock::now();
  EventLoop::Clock::time_point last_tx = EventLoop::Clock::now();
};

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
  loop_.add_timer(EventLoop::Clock::now() + config_.heartbeat_interval, [this] { heartbeat(); });
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

void MeshFabric::listen() {
  sockaddr_in addr{};
  const std::uint16_t port = config_.role == MeshConfig::Role::kManager ? config_.port : 0;
  if (!parse_ipv4(config_.bind, addr)) {
    throw std::runtime_error("mesh: cannot resolve bind address " + config_.bind);
  }
  addr.sin_port = htons(port);
  listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    const std::string why = errno_text();
    close(listen_fd_);
    listen_fd_ = -1;
    throw std::runtime_error(
        fmt::format("mesh: cannot listen on {}:{}: {}", config_.bind, port, why));
  }
  ::listen(listen_fd_, 64);
  socklen_t len = sizeof addr;
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  listen_port_ = ntohs(addr.sin_port);
  loop_.add_fd(listen_fd_, EPOLLIN, [this](std::uint32_t) { accept_ready(); });
}

void MeshFabric::accept_ready() {
  while (true) {
    sockaddr_in peer{};
    socklen_t len = sizeof peer;
    const int fd =
        accept4(listen_fd_, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      return;
    }
    set_socket_options(fd);
    auto conn = std::make_unique<Connection>(*this, fd, false);
    char text[INET_ADDRSTRLEN] = {};
    inet_ntop(AF_INET, &peer.sin_addr, text, sizeof text);
    conn->label = fmt::format("{}:{}", text, ntohs(peer.sin_port));
    conn->phase = Connection::Phase::kAwaitHello;
    Connection& c = *conn;
    connections_[fd] = std::move(conn);
    loop_.add_fd(fd, EPOLLIN, [this, &c](std::uint32_t events) {
      if (events & EPOLLOUT) {
        write_some(c);
      }
      if (c.phase != Connection::Phase::kClosed && (events & (EPOLLIN | EPOLLHUP | EPOLLERR))) {
        on_readable(c);
      }
    });
    log_.debug("mesh: accepted a connection from {}", c.label);
  }
}

void MeshFabric::dial_manager_attempt() {
  dial(config_.manager_host, config_.port, 0, true);
}

void MeshFabric::dial(const std::string& host, std::uint16_t port, NodeId peer, bool registering) {
  sockaddr_in addr{};
  if (!parse_ipv4(host, addr)) {
    const std::string why = fmt::format("cannot resolve {}", host);
    if (registering) {
      on_fatal_("mesh: " + why);
    } else {
      log_.error("mesh: {}", why);
    }
    return;
  }
  addr.sin_port = htons(port);
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  set_socket_options(fd);
  auto conn = std::make_unique<Connection>(*this, fd, true);
  conn->registering = registering;
  conn->peer = registering ? 0 : peer;
  conn->label = fmt::format("{}:{}", host, port);
  Connection& c = *conn;
  connections_[fd] = std::move(conn);
  if (!registering) {
    peers_[peer] = &c;
  }
  const int rc = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  if (rc != 0 && errno != EINPROGRESS) {
    close_connection(c, fmt::format("connect to {} failed: {}", c.label, errno_text()));
    return;
  }
  loop_.add_fd(fd, EPOLLIN | EPOLLOUT, [this, &c](std::uint32_t events) {
    if (c.phase == Connection::Phase::kConnecting) {
      int error = 0;
      socklen_t len = sizeof error;
      getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &error, &len);
      if (error != 0) {
        errno = error;
        close_connection(c, fmt::format("connect to {} failed: {}", c.label, errno_text()));
        return;
      }
      if (!(events & EPOLLOUT)) {
        return;
      }
      on_connected(c);
      return;
    }
    if (events & EPOLLOUT) {
      write_some(c);
    }
    if (c.phase != Connection::Phase::kClosed && (events & (EPOLLIN | EPOLLHUP | EPOLLERR))) {
      on_readable(c);
    }
  });
}

void MeshFabric::on_connected(Connection& c) {
  c.phase = Connection::Phase::kAwaitChallenge;
  loop_.modify_fd(c.fd, EPOLLIN);
  ByteWriter w;
  w.str(std::string(kHandshakeMagic));
  w.u16(config_.version_major);
  w.u16(config_.version_minor);
  w.u32(c.registering ? kUnassignedNode : node_id_);
  w.u32(kCapabilities);
  w.raw(c.my_nonce);
  send_control(c, static_cast<std::uint8_t>(FrameOp::kHello), w.bytes());
  write_some(c);
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

void MeshFabric::reject(Connection& c, const std::string& reason) {
  ++stats_.refused_peers;
  log_.warn("mesh: refused {}: {}", c.label, reason);
  ByteWriter w;
  w.str(reason);
  send_control(c, static_cast<std::uint8_t>(FrameOp::kReject), w.bytes());
  c.close_after_flush = true;
  write_some(c);
}

void MeshFabric::on_readable(Connection& c) {
  std::string reason;
  const auto result = c.reader.pump(
      [&c](const iovec* iov, int count) { return readv(c.fd, iov, count); }, c, reason);
  stats_.wire_bytes_received += c.reader.bytes_read() - c.counted_rx;
  c.counted_rx = c.reader.bytes_read();
  c.last_rx = EventLoop::Clock::now();
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

bool MeshFabric::on_control(Connection& c, const FrameHeader& h, std::span<const std::byte> body) {
  if (c.phase == Connection::Phase::kClosed || c.close_after_flush) {
    return false;
  }
  ByteReader r(body);
  const auto op = h.op;
  if (op == FrameOp::kReject) {
    const std::string reason = r.str();
    if (c.registering && !ready_) {
      close_connection(c, "", false);
      on_fatal_(fmt::format("mesh: manager {} refused us: {}", c.label, reason));
    } else {
      close_connection(c, fmt::format("{} refused us: {}", c.label, reason));
    }
    return false;
  }
  if (op == FrameOp::kHeartbeat) {
    return true;
  }
  switch (c.phase) {
    case Connection::Phase::kAwaitHello: {
      if (op != FrameOp::kHello) {
        reject(c, "expected a handshake");
        return false;
      }
      const std::string magic = r.str();
      const std::uint16_t major = r.u16();
      const std::uint16_t minor = r.u16();
      const NodeId node = r.u32();
      r.u32();  // capabilities: nothing optional yet
      for (auto& b : c.peer_nonce) {
        b = static_cast<std::byte>(r.u8());
      }
      if (r.failed() || magic != kHandshakeMagic) {
        reject(c, "not an ERNIC mesh handshake");
        return false;
      }
      if (major != config_.version_major) {
        reject(c,
               fmt::format("mesh protocol version {}.{} is not supported (this node speaks {}.{})",
                           major, minor, config_.version_major, config_.version_minor));
        return false;
      }
      if (node == kUnassignedNode && config_.role != MeshConfig::Role::kManager) {
        reject(c, "registration must go to the manager");
        return false;
      }
      c.claimed_peer = node;
      ByteWriter w;
      w.u16(config_.version_major);
      w.u16(config_.version_minor);
      w.u32(node_id_);
      w.u32(kCapabilities);
      w.raw(c.my_nonce);
      w.raw(make_proof(config_.token, "acceptor", c.peer_nonce, c.my_nonce));
      send_control(c, static_cast<std::uint8_t>(FrameOp::kChallenge), w.bytes());
      c.phase = Connection::Phase::kAwaitAuth;
      return true;
    }
    case Connection::Phase::kAwaitAuth: {
      Proof proof{};
      for (auto& b : proof) {
        b = static_cast<std::byte>(r.u8());
      }
      if (op != FrameOp::kAuthenticate || r.failed() ||
          !proofs_equal(proof, make_proof(config_.token, "dialer", c.my_nonce, c.peer_nonce))) {
        reject(c, "authentication failed: the mesh token does not match");
        return false;
      }
      c.phase = Connection::Phase::kEstablished;
      if (c.claimed_peer != kUnassignedNode) {
        c.peer = c.claimed_peer;
        if (auto it = peers_.find(c.peer); it != peers_.end() && it->second != &c) {
          close_connection(*it->second, "replaced by a new connection", false);
        }
        peers_[c.peer] = &c;
        count_peer(c);
        log_.info("mesh: node {} connected from {}", c.peer, c.label);
      }
      return true;
    }
    case Connection::Phase::kAwaitChallenge: {
      if (op != FrameOp::kChallenge) {
        close_connection(c, fmt::format("{} broke the handshake", c.label));
        return false;
      }
      const std::uint16_t major = r.u16();
      const std::uint16_t minor = r.u16();
      const NodeId node = r.u32();
      r.u32();
      for (auto& b : c.peer_nonce) {
        b = static_cast<std::byte>(r.u8());
      }
      Proof proof{};
      for (auto& b : proof) {
        b = static_cast<std::byte>(r.u8());
      }
      if (r.failed() || major != config_.version_major) {
        const std::string why =
            fmt::format("{} speaks mesh protocol {}.{}, this node {}.{}", c.label, major, minor,
                        config_.version_major, config_.version_minor);
        close_connection(c, why, !c.registering);
        if (c.registering) {
          on_fatal_("mesh: " + why);
        }
        return false;
      }
      if (!proofs_equal(proof, make_proof(config_.token, "acceptor", c.my_nonce, c.peer_nonce))) {
        const std::string why =
            fmt::format("{} failed to prove the mesh token: the tokens differ", c.label);
        close_connection(c, why, !c.registering);
        if (c.registering) {
          on_fatal_("mesh: " + why);
        }
        return false;
      }
      ByteWriter w;
      w.raw(make_proof(config_.token, "dialer", c.peer_nonce, c.my_nonce));
      send_control(c, static_cast<std::uint8_t>(FrameOp::kAuthenticate), w.bytes());
      c.phase = Connection::Phase::kEstablished;
      if (c.registering) {
        ByteWriter reg;
        write_node(reg, {kUnassignedNode, config_.bind, listen_port_, config_.mac, config_.gids});
        send_control(c, static_cast<std::uint8_t>(FrameOp::kRegister), reg.bytes());
        peers_[0] = &c;
      } else {
        c.peer = node;
        log_.info("mesh: connected to node {} at {}", node, c.label);
      }
      count_peer(c);
      write_some(c);
      return true;
    }
    case Connection::Phase::kEstablished:
      break;
    default:
      return false;
  }
  // Established: the manager protocol.
  if (op == FrameOp::kRegister && config_.role == MeshConfig::Role::kManager &&
      c.peer == kUnassignedNode) {
    MeshNode node = read_node(r);
    if (r.failed()) {
      reject(c, "malformed registration");
      return false;
    }
    for (const auto& gid : node.gids) {
      auto owner = gid_to_node_.find(gid);
      if (owner != gid_to_node_.end()) {
        reject(c, fmt::format("GID {} already belongs to node {}", gid, owner->second));
        return false;
      }
    }
    node.id = next_node_id_++;
    if (node.host.empty() || node.host == "0.0.0.0") {
      node.host = c.label.substr(0, c.label.rfind(':'));
    }
    c.peer = node.id;
    peers_[node.id] = &c;
    count_peer(c);
    log_.info("mesh: worker {} registered from {} (GIDs: {})", node.id, c.label,
              fmt::join(node.gids, ","));
    nodes_.push_back(node);
    for (const auto& gid : node.gids) {
      gid_to_node_[gid] = node.id;
    }
    ByteWriter w;
    w.u32(node.id);
    send_control(c, static_cast<std::uint8_t>(FrameOp::kWelcome), w.bytes());
    broadcast_topology();
    return true;
  }
  if (op == FrameOp::kWelcome && c.registering) {
    node_id_ = r.u32();
    log_.info("mesh: registered with the manager at {} as node {}", c.label, node_id_);
    return true;
  }
  if (op == FrameOp::kTopology && c.registering) {
    std::vector<MeshNode> nodes;
    const std::uint16_t count = r.u16();
    for (std::uint16_t i = 0; i < count && !r.failed(); ++i) {
      nodes.push_back(read_node(r));
    }
    if (r.failed()) {
      close_connection(c, "malformed topology from the manager");
      return false;
    }
    apply_topology(std::move(nodes));
    return true;
  }
  close_connection(c, fmt::format("unexpected control frame 0x{:02x} from {}",
                                  static_cast<unsigned>(op), c.label));
  return false;
}

void MeshFabric::broadcast_topology() {
  ByteWriter w;
  w.u16(static_cast<std::uint16_t>(nodes_.size()));
  for (const auto& n : nodes_) {
    write_node(w, n);
  }
  for (auto& [id, c] : peers_) {
    if (c->phase == Connection::Phase::kEstablished) {
      send_control(*c, static_cast<std::uint8_t>(FrameOp::kTopology), w.bytes());
      write_some(*c);
    }
  }
}

void MeshFabric::apply_topology(std::vector<MeshNode> nodes) {
  std::vector<NodeId> gone;
  for (const auto& [id, c] : peers_) {
    if (std::none_of(nodes.begin(), nodes.end(),
                     [id = id](const MeshNode& n) { return n.id == id; })) {
      gone.push_back(id);
    }
  }
  for (NodeId id : gone) {
    close_connection(*peers_[id], fmt::format("node {} left the mesh", id));
  }
  nodes_ = std::move(nodes);
  gid_to_node_.clear();
  for (const auto& n : nodes_) {
    for (const auto& gid : n.gids) {
      gid_to_node_[gid] = n.id;
    }
    if (n.id > node_id_ && node_id_ != kUnassignedNode && !peers_.contains(n.id)) {
      dial(n.host, n.port, n.id, false);  // the lower id dials
    }
  }
  if (!ready_ && node_id_ != kUnassignedNode) {
    ready_ = true;
    on_ready_();
  }
}

void MeshFabric::count_peer(Connection& c) {
  if (c.counted) {
    return;
  }
  c.counted = true;
  ++stats_.peers;
  if (on_peers_changed_) {
    on_peers_changed_();
  }
}

void MeshFabric::close_connection(Connection& c, const std::string& reason, bool lost) {
  if (c.phase == Connection::Phase::kClosed) {
    return;
  }
  const bool was_established = c.phase == Connection::Phase::kEstablished;
  c.phase = Connection::Phase::kClosed;
  loop_.remove_fd(c.fd);
  close(c.fd);
  NodeId peer = c.peer;
  auto it = peers_.find(peer);
  const bool owned_peer = it != peers_.end() && it->second == &c;
  if (owned_peer) {
    peers_.erase(it);
  }
  if (!reason.empty()) {
    if (was_established && owned_peer) {
      log_.warn("mesh: lost node {}: {}", peer, reason);
    } else {
      log_.warn("mesh: {}", reason);
    }
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
    log_.error("mesh: lost the manager ({}); data to other nodes continues", reason);
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

void MeshFabric::heartbeat() {
  if (shut_down_) {
    return;
  }
  const auto now = EventLoop::Clock::now();
  std::vector<Connection*> dead;
  for (auto& [fd, c] : connections_) {
    if (c->phase != Connection::Phase::kEstablished) {
      continue;
    }
    if (now - c->last_rx > config_.heartbeat_timeout) {
      dead.push_back(c.get());
      continue;
    }
    if (now - c->last_tx >= config_.heartbeat_interval && c->control_queue.empty()) {
      send_control(*c, static_cast<std::uint8_t>(FrameOp::kHeartbeat), {});
      write_some(*c);
    }
  }
  for (Connection* c : dead) {
    close_connection(
        *c, "no heartbeat for " + std::to_string(config_.heartbeat_timeout.count()) + " ms");
  }
  loop_.add_timer(now + config_.heartbeat_interval, [this] { heartbeat(); });
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
  auto it = peers_.find(to);
  if (it == peers_.end()) {
    return;  // the engine learns of the loss through peer_lost()
  }
  Connection& c = *it->second;
  Connection::OutFrame f;
  f.header = encode_header(header);
  f.payload = payload;
  f.length = header.payload_length;
  f.src_qpn = header.src_qpn;
  f.data = cancellable(header, false);
  f.request = cancellable(header, true);
  auto& queue = c.qp_queues[header.src_qpn];
  if (queue.empty()) {
    c.round_robin.push_back(header.src_qpn);
  }
  queue.push_back(f);
  c.want_write = true;
}

void MeshFabric::cancel(NodeId to, std::uint32_t src_qpn, bool requests_only) {
  std::erase_if(self_frames_, [&](const SelfFrame& f) {
    return to == node_id_ && f.header.src_qpn == src_qpn && cancellable(f.header, requests_only);
  });
  auto it = peers_.find(to);
  if (it == peers_.end()) {
    return;
  }
  Connection& c = *it->second;
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
      c.wire_bytes -= w->size();
      w = c.wire.erase(w);
    } else {
      ++w;
    }
  }
}

void MeshFabric::write_some(Connection& c) {
  if (c.phase == Connection::Phase::kClosed || c.phase == Connection::Phase::kConnecting) {
    return;
  }
  const bool data_allowed = c.phase == Connection::Phase::kEstablished;
  while (true) {
    // Commit frames to the wire order: control first, then one frame per QP in turn, so a
    // large transfer cannot starve a latency test.
    while (c.wire_bytes < kWireWindow) {
      if (!c.control_queue.empty()) {
        c.wire_bytes += c.control_queue.front().size();
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
      c.wire_bytes += queue.front().size();
      c.wire.push_back(queue.front());
      queue.pop_front();
      if (!queue.empty()) {
        c.round_robin.push_back(qpn);
      } else {
        c.qp_queues.erase(qpn);
      }
    }
    if (c.wire.empty()) {
      break;
    }
    iovec iov[kMaxIov];
    int count = 0;
    for (auto& f : c.wire) {
      if (count + 2 > kMaxIov) {
        break;
      }
      if (f.written < kFrameHeaderSize) {
        iov[count++] = {f.header.data() + f.written, kFrameHeaderSize - f.written};
      }
      if (f.length > 0) {
        const std::size_t done = f.written > kFrameHeaderSize ? f.written - kFrameHeaderSize : 0;
        // Straight from registered memory: the only copy is the kernel's.
        iov[count++] = {const_cast<std::byte*>(f.payload) + done, f.length - done};
      }
    }
    const ssize_t n = writev(c.fd, iov, count);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        if (!c.epollout_armed) {
          c.epollout_armed = true;
          loop_.modify_fd(c.fd, EPOLLIN | EPOLLOUT);
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
    std::size_t left = static_cast<std::size_t>(n);
    while (left > 0 && !c.wire.empty()) {
      auto& f = c.wire.front();
      const std::size_t rest = f.size() - f.written;
      if (left >= rest) {
        left -= rest;
        c.wire_bytes -= f.size();
        c.wire.pop_front();
      } else {
        f.written += left;
        left = 0;
      }
    }
  }
  c.want_write = false;
  if (c.epollout_armed) {
    c.epollout_armed = false;
    loop_.modify_fd(c.fd, EPOLLIN);
  }
  if (c.close_after_flush) {
    close_connection(c, "", false);
  }
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
  for (auto& [fd, c] : connections_) {
    if (c->want_write) {
      write_some(*c);
    }
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
  if (listen_fd_ >= 0) {
    loop_.remove_fd(listen_fd_);
    close(listen_fd_);
    listen_fd_ = -1;
  }
}

}  // namespace ernic::emu
