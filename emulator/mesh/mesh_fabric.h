#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <netinet/in.h>

#include "engine/fabric.h"
#include "runtime/copy_engine.h"
#include "runtime/descriptor_reserve.h"
#include "runtime/event_loop.h"
#include "runtime/log.h"
#include "runtime/shared_memory.h"

namespace ernic::emu {

inline constexpr std::uint16_t kMeshVersionMajor = 1;
inline constexpr std::uint16_t kMeshVersionMinor = 0;
inline constexpr NodeId kUnassignedNode = 0xffffffffu;

struct MeshConfig {
  enum class Role { kManager, kWorker };
  Role role = Role::kManager;
  std::string manager_host;  // worker: where the manager listens
  std::uint16_t port = 0;    // manager: port to listen on (0 = any); worker: manager's port
  std::string bind = "127.0.0.1";
  std::string token;
  std::vector<std::string> gids;
  std::string mac;
  // Only tests change these: a peer speaking another major version must be refused.
  std::uint16_t version_major = kMeshVersionMajor;
  std::uint16_t version_minor = kMeshVersionMinor;
  std::chrono::milliseconds heartbeat_interval{250};
  std::chrono::milliseconds heartbeat_timeout{3000};
  std::chrono::milliseconds manager_connect_timeout{5000};
  // A connection that has not authenticated by then is closed.
  std::chrono::milliseconds handshake_timeout{5000};
  // Accepted connections still in the handshake; more are refused until some finish.
  std::size_t max_unauthenticated = 64;
  // Connections to each peer besides the first, for data only. A QP's frames to a peer all go
  // on one of them (its order kept), and QPs are spread over them, so a latency test's frames
  // never queue in the kernel's socket buffers behind another QP's bulk bytes.
  std::uint32_t extra_lanes = 3;
  // Peers in this network namespace connect over a unix socket (mesh_sockets.cc); off, every
  // connection is TCP.
  bool local_sockets = true;
  // Over a local socket, a payload of at least kByReferenceBytes in memory the front end
  // shares is sent as a reference the peer copies from (mesh_shared_memory.cc), if the peer
  // takes references; off, this node neither sends nor takes them.
  bool payloads_by_reference = true;
  // Over a local socket, the stream goes through a ring in shared memory once the handshake is
  // done (mesh_rings.cc), if the peer reads rings: no system call per frame while both spin.
  bool local_rings = true;
  // Payloads by reference longer than a turn are copied by a CopyEngine (a thread at idle
  // priority) while the event loop goes on; off (the default: twice the bulk bandwidth on two
  // cores), the loop copies them over several turns.
  bool copies_elsewhere = false;
};

inline constexpr std::uint32_t kByReferenceBytes = 16u << 10;
inline constexpr std::uint32_t kByReferenceSegmentBytes = 1u << 20;

struct MeshNode {
  NodeId id = 0;
  std::string host;
  std::uint16_t port = 0;
  std::string mac;
  std::vector<std::string> gids;
};

struct MeshStats {
  std::uint64_t wire_bytes_sent = 0;
  std::uint64_t wire_bytes_received = 0;
  std::uint64_t malformed_frames = 0;
  std::uint64_t refused_peers = 0;
  std::uint64_t peers = 0;
  std::uint64_t nodes_lost = 0;  // established peers lost (closed, silent, removed)
  // What the rest of the instance (doorbells, completions, other peers) can wait behind, in
  // bytes: the most read from / written to one connection before the event loop moved on.
  std::uint64_t max_read_turn_bytes = 0;
  std::uint64_t max_write_turn_bytes = 0;
  // The most bytes written on a connection between a small data frame (payload up to
  // kSmallFrameBytes: a latency message, an ACK) being queued and its own first byte.
  std::uint64_t max_bytes_ahead_of_small_frame = 0;
  std::uint64_t lanes = 0;  // established extra connections to peers (MeshConfig::extra_lanes)
  std::uint64_t local_lanes = 0;         // of those, the ones over a local socket
  std::uint64_t bytes_by_reference = 0;  // payload bytes sent as references to shared memory
  std::uint64_t peer_regions = 0;        // peers' memory regions mapped here
  std::uint64_t copies_elsewhere = 0;    // payloads by reference the CopyEngine copied
  std::uint64_t copies_rescued = 0;      // of those, finished by the loop (the thread was late)
  // The most payload bytes one connection had sent by reference and not seen acknowledged
  // (kCopied): what a frame of another QP could wait behind in the peer's copies.
  std::uint64_t max_referenced_in_flight = 0;
  std::uint64_t read_calls = 0;    // system calls that read a connection (two per small frame)
  std::uint64_t ring_streams = 0;  // connections this node reads from a ring (local_rings)
  // Writes into a ring whose reader had said it blocks: each cost an eventfd write and its
  // reader a wake-up, where the rest cost no system call.
  std::uint64_t ring_wakeups = 0;
};

inline constexpr std::uint32_t kSmallFrameBytes = 64u << 10;

// The TCP mesh: node 0 (the manager) assigns node ids, distributes the topology with the
// GID -> node table and watches liveness; data goes directly between nodes (full mesh, the
// lower id dials). Every connection starts with a versioned, token-authenticated handshake.
class MeshFabric final : public Fabric {
 public:
  MeshFabric(EventLoop& loop, Logger& log, MeshConfig config);
  ~MeshFabric() override;
  MeshFabric(const MeshFabric&) = delete;
  MeshFabric& operator=(const MeshFabric&) = delete;

  void attach(FabricReceiver& receiver) { receiver_ = &receiver; }
  // Where payloads may be found in memory that co-located peers can map themselves.
  void share_memory_from(const SharedMemoryDirectory& directory) { shared_memory_ = &directory; }
  // Manager: listens and is ready at once. Worker: registers with the manager; ready once it
  // has a node id and the topology. `on_fatal` reports what makes the instance unusable
  // (manager unreachable, registration refused).
  void start(std::function<void()> on_ready, std::function<void(const std::string&)> on_fatal);
  // Writes what send() queued; the event loop calls it after each busy iteration.
  void flush();
  void shutdown();
  std::uint16_t listen_port() const { return listen_port_; }
  const MeshStats& stats() const { return stats_; }
  // Called whenever stats().peers changes, so a stats snapshot can follow the mesh at once.
  void on_peers_changed(std::function<void()> callback) { on_peers_changed_ = std::move(callback); }

  NodeId local_node() const override { return node_id_; }
  std::optional<NodeId> resolve_gid(std::string_view gid) const override;
  bool reachable(NodeId node) const override;
  void send(NodeId to, const FrameHeader& header, const std::byte* payload) override;
  void cancel(NodeId to, std::uint32_t src_qpn, bool requests_only) override;
  // Segments of kByReferenceSegmentBytes to a co-located peer that takes payloads by
  // reference: only 64 bytes of each go on its socket, and each one costs the receiver a
  // hand-off to its CopyEngine.
  std::uint32_t segment_size_to(NodeId node) const override;
  void release_memory(const std::byte* base, std::size_t length) override;

 private:
  struct OutFrame;
  struct Connection;
  friend struct Connection;

  void listen();
  // The unix socket that peers in this network namespace dial instead of TCP.
  void listen_local();
  // A connected unix socket to the peer listening on host:port here, or -1.
  int dial_local(const std::string& host, std::uint16_t port);
  void accept_ready(int listen_fd, bool local);
  // Takes `fd` in as a new unauthenticated connection, or refuses it beyond the bound.
  void accept_connection(int fd, bool local, std::string label);
  void on_events(Connection& c, std::uint32_t events);
  // Shared memory with co-located peers (mesh_shared_memory.cc).
  // Turns `f`, queued on local connection `c`, into a reference if its payload is shareable.
  void send_by_reference(Connection& c, OutFrame& f);
  bool on_shared_memory_frame(Connection& c, FrameOp op, ByteReader& r);
  // [base, base + length) goes away: queued references to it become copies, peers unmap it.
  void forget_shared_memory(const std::byte* base, std::size_t length);
  ssize_t receive(Connection& c, const iovec* iov, int count);
  // Goes on reading the connections whose readers have work before the next byte arrives (a
  // payload by reference being copied, bytes read ahead): a turn each; true if there were any.
  bool continue_reading_without_input();
  bool reading_without_input() const;
  // Gives the copy of a payload by reference the reader of `c` met to the CopyEngine, if it is
  // long enough to be worth the hand-off; `c` reads nothing more until it is done.
  bool copy_elsewhere(Connection& c, std::byte* destination, const std::byte* source,
                      std::uint32_t length, bool streaming);
  void copy_done(CopyEngine::Token token, bool rescued);
  // The copy window: `c` placed `length` more bytes that came by reference (acknowledged to the
  // peer in batches, and whenever reading stops).
  void count_copied(Connection& c, std::uint32_t length);
  void acknowledge_copies(Connection& c);
  // Whether `f` may be committed to `c`'s wire now: a QP's frame by reference waits while the
  // peer has not placed most of what went before it.
  bool copy_window_allows(const Connection& c, const OutFrame& f) const;
  // `c`'s copy in the engine is done here, now (its memory is about to go, or its peer).
  void end_copy_elsewhere(Connection& c, bool finish);
  ssize_t transmit(Connection& c, const iovec* iov, int count, const std::vector<int>* fds);
  // The stream of a local connection in shared memory (mesh_rings.cc).
  // Queues kRing with a new ring for what `c` sends after it, if the peer reads rings.
  void offer_ring(Connection& c);
  bool on_ring_frame(Connection& c, ByteReader& r);
  ssize_t write_ring(Connection& c, const iovec* iov, int count, const std::vector<int>* fds);
  ssize_t read_ring(Connection& c, const iovec* iov, int count);
  // Reads the socket under `c`'s ring: the descriptors' markers, and the end of the stream.
  void receive_markers(Connection& c);
  // Reads the rings that have bytes (an event loop poller); true if there were any.
  bool poll_rings();
  // Tells the rings' writers that this node is about to block; false if one has bytes.
  bool rings_may_sleep();
  void close_rings(Connection& c);
  // The connection leaves the handshake (authenticated or closed).
  void leave_handshake(Connection& c);
  // Why `c` may not be node c.claimed_peer, or empty when it may.
  std::string refuse_claim(const Connection& c) const;
  void dial(const std::string& host, std::uint16_t port, NodeId peer, bool registering,
            std::uint32_t lane = 0);
  // Dials the extra lanes to the peer of `primary`, the connection this node dialed.
  void open_lanes(const Connection& primary);
  // Why lane connection `c` may not join its peer, or empty when it may.
  std::string refuse_lane(const Connection& c) const;
  void add_lane(Connection& c);
  // The connection QP `qpn`'s frames to `to` take; with `assign`, a QP seen the first time gets
  // the next lane. Null when `to` is not connected (or, without `assign`, the QP sent nothing).
  Connection* data_connection(NodeId to, std::uint32_t qpn, bool assign);
  // The primary connection to `peer` closed: its lanes close with it.
  void close_lanes(NodeId peer);
  void dial_manager_attempt();
  void on_connected(Connection& c);
  bool on_control(Connection& c, const FrameHeader& h, std::span<const std::byte> body);
  void on_readable(Connection& c);
  void write_some(Connection& c);
  // Moves queued frames into `c`'s wire order, up to the wire window: control first, then one
  // frame per QP in turn, so that a large transfer cannot starve a latency test.
  void commit_to_wire(Connection& c, bool data_allowed);
  // A write put `written` more bytes of `c`'s wire into the socket: the frames it finished
  // leave the wire.
  void account_written(Connection& c, std::size_t written);
  // Asks the event loop for EPOLLOUT on `c`, once.
  void arm_epollout(Connection& c);
  // What the event loop watches `c` for: EPOLLOUT when armed, EPOLLIN unless its reader waits
  // for a copy elsewhere (the socket stays readable meanwhile: level-triggered epoll would spin).
  void update_events(Connection& c);
  void send_control(Connection& c, std::uint8_t op, std::basic_string<std::byte> body);
  void reject(Connection& c, const std::string& reason);
  void close_connection(Connection& c, const std::string& reason, bool lost = true);
  // close_connection() of an extra lane: an established lane lost takes its peer with it.
  void close_lane(Connection& c, const std::string& reason, bool lost, bool was_established);
  // Counts an established connection in stats_.peers, once.
  void count_peer(Connection& c);
  void broadcast_topology();
  void apply_topology(std::vector<MeshNode> nodes);
  void heartbeat();
  void expire_handshakes(EventLoop::Clock::time_point now);
  void deliver_to_self();

  EventLoop& loop_;
  Logger& log_;
  MeshConfig config_;
  FabricReceiver* receiver_ = nullptr;
  const SharedMemoryDirectory* shared_memory_ = nullptr;
  int resume_poller_ = 0;
  std::unique_ptr<CopyEngine> copy_engine_;
  struct SharedRegion {
    const std::byte* base;
    std::size_t size;
  };
  std::map<std::uint64_t, SharedRegion> shared_regions_;  // ours that some peer has mapped
  NodeId node_id_ = kUnassignedNode;
  int listen_fd_ = -1;
  int local_listen_fd_ = -1;
  std::uint16_t listen_port_ = 0;
  std::unordered_map<int, std::unique_ptr<Connection>> connections_;
  std::vector<std::unique_ptr<Connection>> closed_;  // freed in flush(), never mid-callback
  std::map<NodeId, Connection*> peers_;              // each peer's primary connection
  std::map<NodeId, std::vector<Connection*>> lanes_;
  std::map<std::pair<NodeId, std::uint32_t>, std::uint32_t> qp_lanes_;  // 0: the primary
  std::map<NodeId, std::uint32_t> next_lane_;
  std::vector<MeshNode> nodes_;
  std::unordered_map<std::string, NodeId> gid_to_node_;
  NodeId next_node_id_ = 1;
  bool ready_ = false;
  bool shut_down_ = false;
  std::function<void()> on_ready_;
  std::function<void(const std::string&)> on_fatal_;
  std::function<void()> on_peers_changed_;
  EventLoop::Clock::time_point manager_dial_deadline_;
  EventLoop::Clock::time_point last_heartbeat_;
  DescriptorReserve reserve_;
  std::size_t unauthenticated_ = 0;
  bool refusing_unauthenticated_ = false;  // logged once per episode
  bool refusing_at_limit_ = false;         // logged once per episode
  struct SelfFrame {
    FrameHeader header;
    const std::byte* payload;
  };
  std::deque<SelfFrame> self_frames_;
  MeshStats stats_;
};

}  // namespace ernic::emu
