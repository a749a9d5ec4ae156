#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/fabric.h"
#include "engine/verbs.h"

namespace ernic::emu {

struct EngineConfig {
  // Messages are cut into segments of at most this size so that one large transfer neither
  // overflows socket buffers nor starves other QPs.
  std::uint32_t max_segment = 1u << 20;
};

struct EngineStats {
  std::uint64_t bytes_sent = 0;      // payload bytes handed to the fabric
  std::uint64_t bytes_received = 0;  // payload bytes placed into registered memory
  std::uint64_t rdma_write_bytes = 0;
  std::uint64_t rdma_read_bytes = 0;
  std::uint64_t completions = 0;
  std::uint64_t completion_errors = 0;
  std::uint64_t naks_sent = 0;
  std::uint64_t rnr_retries = 0;
  std::uint64_t qps = 0;
  // The traffic of latency tests: requests posted to a QP with nothing else outstanding, and
  // requests of at most kShortRequestBytes served for a peer. A bandwidth test keeps a window
  // of requests queued and moves larger ones. The instance's scheduling follows this count
  // (runtime/traffic_scheduling.h).
  std::uint64_t latency_requests = 0;
  // The traffic that keeps a loop copying: requests of kStreamRequestBytes or more, posted or
  // served, so that both ends of a transfer count it. Where the instance's loop runs follows
  // this count (ShmFrontEnd::place_loop).
  std::uint64_t stream_requests = 0;
};

// One queue pair's share of the traffic, in the per-QP sections of the stats file (rocm-ernic's
// `QP N:` sections).
struct QpStats {
  std::uint64_t bytes_sent = 0;
  std::uint64_t bytes_received = 0;
  std::uint64_t bytes_rdma_read = 0;
  std::uint64_t bytes_rdma_write = 0;
  std::uint64_t wqes_processed = 0;  // work requests posted to its send and receive queues
  std::uint64_t cqes_posted = 0;     // completions it produced
};

// The largest request a responder counts as latency traffic (EngineStats::latency_requests).
inline constexpr std::uint32_t kShortRequestBytes = 16u << 10;
// The shortest request counted in EngineStats::stream_requests.
inline constexpr std::uint64_t kStreamRequestBytes = 1u << 20;

using Clock = std::chrono::steady_clock;

// The RDMA engine of one instance: protection domains, memory regions, completion queues and
// RC queue pairs. It reaches other engines only through a Fabric and is driven from one thread.
class Engine final : public FabricReceiver {
 public:
  using Handle = std::uint32_t;
  using CompletionHandler = std::function<void(const Completion&)>;

  Engine(
      Fabric& fabric, EngineConfig config = {},
      std::function<Clock::time_point()> clock = [] { return Clock::now(); });
  ~Engine() override;
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  Handle alloc_pd();
  void dealloc_pd(Handle pd);
  // `host` is where the instance sees the memory; `iova` is the address work requests and
  // peers use for it.
  MemoryKeys reg_mr(Handle pd, std::byte* host, std::uint64_t iova, std::uint64_t length,
                    std::uint32_t access);
  void dereg_mr(std::uint32_t lkey);
  // The front end is about to unmap [host, host + length) (after destroying what used it).
  void release_memory(const std::byte* host, std::size_t length) {
    fabric_.release_memory(host, length);
  }

  Handle create_cq();
  void destroy_cq(Handle cq);
  // Completions of this CQ go to `handler` instead of the queue poll_cq() reads.
  void set_completion_handler(Handle cq, CompletionHandler handler);
  // Told about every RDMA WRITE segment placed into this engine's memory (qpn of the
  // responder QP, the segment's address and length): a front end wakes a client waiting on it.
  using WriteObserver =
      std::function<void(std::uint32_t qpn, std::uint64_t iova, std::uint32_t length)>;
  void set_write_observer(WriteObserver observer) { write_observer_ = std::move(observer); }
  // Asked, when a request that consumes a receive finds the QP's receive queue empty, to post
  // receives the QP's owner has queued but this engine has not seen yet (a front end's ring):
  // a NIC sees a posted receive at once, so the sender must not get an RNR NAK for it.
  using ReceiveRefill = std::function<void(std::uint32_t qpn)>;
  void set_receive_refill(ReceiveRefill refill) { receive_refill_ = std::move(refill); }
  std::size_t poll_cq(Handle cq, std::span<Completion> out);

  std::uint32_t create_qp(Handle pd, Handle send_cq, Handle recv_cq);
  void destroy_qp(std::uint32_t qpn);
  void modify_qp(std::uint32_t qpn, const QpAttributes& attributes);
  QpState qp_state(std::uint32_t qpn) const;
  void post_send(std::uint32_t qpn, const SendWr& wr);
  void post_recv(std::uint32_t qpn, const RecvWr& wr);

  // RNR retries wait on timers; the event loop calls these.
  void advance_timers();
  std::optional<Clock::time_point> next_deadline() const;

  const EngineStats& stats() const { return stats_; }
  // Every live QP's counters, by QP number.
  std::map<std::uint32_t, QpStats> qp_stats() const;

  // FabricReceiver
  Placement place(NodeId from, const FrameHeader& header) override;
  void delivered(NodeId from, const FrameHeader& header) override;
  void peer_lost(NodeId node) override;

 private:
  struct MemoryRegion {
    Handle pd;
    std::byte* host;
    std::uint64_t iova;
    std::uint64_t length;
    std::uint32_t access;
  };
  struct CompletionQueue {
    std::deque<Completion> entries;
    CompletionHandler handler;
  };
  struct SendWqe {
    SendWr wr;
    std::uint32_t msn = 0;
    std::byte* local = nullptr;  // translated local buffer
    bool done = false;
    std::uint32_t read_received = 0;  // READ: bytes placed so far
  };
  struct RecvWqe {
    RecvWr wr;
  };
  struct QueuePair {
    std::uint32_t qpn = 0;
    Handle pd = 0;
    Handle send_cq = 0;
    Handle recv_cq = 0;
    QpState state = QpState::kReset;
    std::uint32_t access = 0;
    NodeId remote_node = 0;
    std::uint32_t remote_qpn = 0;
    std::uint8_t rnr_retry = 7;
    std::chrono::microseconds rnr_delay{50};
    // Requester.
    std::deque<SendWqe> send_queue;    // posted, not yet completed, in msn order
    std::size_t next_to_transmit = 0;  // index into send_queue
    std::uint32_t next_msn = 0;
    std::uint8_t rnr_retries_used = 0;
    std::optional<Clock::time_point> rnr_retry_at;
    // Responder.
    std::deque<RecvWqe> recv_queue;
    std::uint32_t expected_msn = 0;
    std::uint32_t expected_offset = 0;
    bool awaiting_retry = false;  // sent an RNR NAK for expected_msn; skip until it comes again
    std::optional<RecvWqe> current_recv;  // consumed by the message being received
    std::byte* current_recv_buffer = nullptr;
    QpStats stats;
  };

  QueuePair& qp(std::uint32_t qpn);
  const MemoryRegion* find_mr(std::uint32_t key) const;
  std::byte* translate(const MemoryRegion* mr, Handle pd, std::uint64_t addr, std::uint64_t length,
                       std::uint32_t needed_access) const;
  void complete(Handle cq, const Completion& completion);
  void transmit_pending(QueuePair& q);
  // The fabric's segment size towards `node`, else config_.max_segment.
  std::uint32_t segment_size_to(NodeId node) const;
  void complete_finished_sends(QueuePair& q);
  void enter_error(QueuePair& q);
  void fail_head(QueuePair& q, WcStatus status);
  void send_control(QueuePair& q, FrameOp op, std::uint32_t msn, NakCode code);
  void responder_error(QueuePair& q, std::uint32_t msn, NakCode code, WcStatus local_status);
  Placement place_frame(NodeId from, const FrameHeader& h);
  Placement place_request(QueuePair& q, const FrameHeader& h);
  Placement place_read_response(QueuePair& q, const FrameHeader& h);
  // delivered(), one per kind of frame placed.
  void on_request_segment(QueuePair& q, const FrameHeader& h);
  // A request served for a peer, in the latency and stream counts (EngineStats).
  void count_served_request(std::uint64_t length);
  void serve_read_request(QueuePair& q, const FrameHeader& h);
  void on_read_response(QueuePair& q, const FrameHeader& h);
  void on_ack(QueuePair& q, std::uint32_t msn);
  void on_nak(QueuePair& q, const FrameHeader& h);

  Fabric& fabric_;
  EngineConfig config_;
  std::function<Clock::time_point()> clock_;
  Handle next_handle_ = 1;
  std::uint32_t next_qpn_ = 0x11;
  std::uint32_t next_key_;
  std::unordered_map<Handle, int> pds_;  // value: number of users
  std::unordered_map<std::uint32_t, MemoryRegion> mrs_;
  std::unordered_map<Handle, CompletionQueue> cqs_;
  std::map<std::uint32_t, QueuePair> qps_;
  EngineStats stats_;
  // The frames in flight that place() accepted, by sending node and local QP: delivered() acts
  // on that frame. Frames of different peers, and of different QPs of one peer, interleave (a
  // connection each, and a payload may arrive over several reads); the frames one node sends
  // to one QP arrive in order, as the fabric keeps each QP's frames on one connection.
  struct InFlight {
    NodeId from;
    std::uint32_t qpn;
    bool operator==(const InFlight&) const = default;
  };
  std::vector<InFlight> accepted_in_flight_;
  bool accepted_ = false;  // the frame place_frame() is looking at was accepted
  bool take_accepted(InFlight frame);
  WriteObserver write_observer_;
  ReceiveRefill receive_refill_;
};

}  // namespace ernic::emu
