#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "frontend/guest_region_file.h"
#include "frontend/shm_protocol.h"
#include "runtime/cpu_placement.h"
#include "runtime/descriptor_reserve.h"
#include "runtime/event_loop.h"
#include "runtime/log.h"
#include "runtime/shared_memory.h"

namespace ernic::emu {

// What a client learns about the instance it attached to.
struct InstanceIdentity {
  std::function<NodeId()> node;
  std::vector<std::string> gids;
  std::string mac;
};

// Serves the shared-memory front end on a UNIX socket. One of possibly several front ends of
// an instance (a vfio-user server would be another): it only translates between its transport
// and the engine's verbs.
class ShmFrontEnd final : public SharedMemoryDirectory {
 public:
  ShmFrontEnd(EventLoop& loop, Engine& engine, Logger& log, InstanceIdentity identity);
  ~ShmFrontEnd() override;
  ShmFrontEnd(const ShmFrontEnd&) = delete;
  ShmFrontEnd& operator=(const ShmFrontEnd&) = delete;

  // Creates the socket (replacing a stale one). Throws when it cannot.
  void listen(const std::string& path);
  // Serves the programs of a QEMU guest through `region` as well (frontend/guest_region.h): the
  // slots they claim become clients like the socket's, polled instead of rung. `region` must
  // outlive this front end's clients (close_all).
  void serve_guest_region(GuestRegionFile& region);
  void close_all();
  // Called after a client went away (its program exited or closed the device): the counters
  // are final for it, so whoever reads them per program (a run's point) gets them now.
  void set_on_detach(std::function<void()> hook) { on_detach_ = std::move(hook); }
  // Sends the completion notifications batched during one loop iteration.
  void notify();
  std::size_t clients() const { return clients_.size(); }
  const GuestRegionFile* guest_region() const { return guest_region_; }
  // The clients among clients() that are programs in the guest (slots of the region).
  std::size_t guest_clients() const;
  // Control requests served, and notifications rung (completion eventfds, channel events): what
  // a device model counts as commands and interrupts.
  std::uint64_t commands() const { return commands_; }
  std::uint64_t interrupts() const { return interrupts_; }
  std::optional<SharedMemory> find(const std::byte* p, std::size_t length) const override;

 private:
  struct Region {
    std::byte* base;
    std::size_t size;
    int fd;                      // the client's memfd, kept for peers on this machine
    std::uint64_t shared_id;     // SharedMemory::id
    bool in_guest_heap = false;  // given out of the guest region's heap, not mapped here
  };
  // A CQ's completion channel (ibv_req_notify_cq): one event written at the next completion
  // after the CQ was armed.
  struct ChannelEvents {
    int fd = -1;
    std::uint64_t cookie = 0;
    bool armed = false;
    std::uint64_t completions = 0;  // pushed to the client for this CQ
  };
  struct Client {
    int fd = -1;
    int area_fd = -1;
    int doorbell_fd = -1;
    int completion_fd = -1;
    shm::Area* area = nullptr;
    std::map<std::uint32_t, Region> regions;
    std::uint32_t next_region = 1;
    std::set<Engine::Handle> pds;
    std::set<Engine::Handle> cqs;
    std::set<std::uint32_t> mrs;
    std::set<std::uint32_t> qps;
    std::map<Engine::Handle, ChannelEvents> channels;
    std::vector<Engine::Handle> events_due;  // written by notify()
    bool notify_pending = false;
    std::uint64_t ring_overflows = 0;
    // A guest region's slot (fd < 0, no descriptors): which slot, the owner token it was claimed
    // with, and its lease as last seen.
    int slot = -1;
    std::uint64_t owner = 0;
    std::uint64_t beat_seen = 0;
    EventLoop::Clock::time_point beat_at{};
    bool opened = false;
    // shm::ClientPresence as last looked at: its count, and looks since it last moved.
    std::uint32_t presence_seen = 0;
    unsigned looks_without_presence = ~0u;
  };

  struct Request;

  void accept_ready();
  void on_message(Client& c);
  // One control request (an operation and its body), answered as the socket protocol answers.
  std::basic_string<std::byte> serve(Client& c, std::span<const std::byte> message,
                                     const std::vector<int>& fds, std::vector<int>& send_fds);
  // The guest region's turn: its heartbeat, slots claimed and given up, leases, mailboxes.
  bool poll_guest_region();
  // Nothing rings for a guest: before the loop blocks it asks to be woken to look again.
  void schedule_guest_poll();
  bool serve_mailbox(Client& c);
  Client& attach_slot(std::uint32_t index, std::uint64_t owner);
  // One handler per operation of the protocol (shm::Op).
  void dispatch(Client& c, shm::Op op, Request& request);
  void handle_open(Client& c, Request& request);
  void handle_register_memory(Client& c, Request& request);
  void handle_alloc_pd(Client& c, Request& request);
  void handle_register_mr(Client& c, Request& request);
  void handle_deregister_mr(Client& c, Request& request);
  void handle_create_cq(Client& c, Request& request);
  void handle_create_qp(Client& c, Request& request);
  void handle_modify_qp(Client& c, Request& request);
  void handle_destroy_qp(Client& c, Request& request);
  void handle_release_memory(Client& c, Request& request);
  void handle_dealloc_pd(Client& c, Request& request);
  void handle_destroy_cq(Client& c, Request& request);
  // Throws ENOMEM when every client's `resource` together has reached `limit`.
  template <typename Set>
  void require_room(Set Client::*resource, std::uint64_t limit, const char* what) const;
  void release(const Region& region);
  void drop(Client& c);
  // Tells every client which CPU this loop runs on: a client there blocks instead of spinning.
  void publish_cpu();
  // Places this loop by the traffic it carries (runtime/cpu_placement.h): while a stream passes
  // through the engine (EngineStats::stream_requests), on the CPU where streaming loops gather;
  // otherwise off the CPUs its clients' programs are polling on.
  void place_loop();
  bool drain(Client& c);
  // Posts the receives for `qpn` still in `c`'s submit ring, ahead of the rest of the ring.
  void take_receives(Client& c, std::uint32_t qpn);
  void push_completion(Client& c, Engine::Handle cq, const Completion& completion);
  void push_raw(Client& c, const shm::CompletionEntry& entry);

  EventLoop& loop_;
  Engine& engine_;
  Logger& log_;
  InstanceIdentity identity_;
  std::string path_;
  int listen_fd_ = -1;
  int poller_ = 0;
  std::map<int, std::unique_ptr<Client>> clients_;
  std::map<Engine::Handle, Client*> cq_owner_;
  std::uint64_t commands_ = 0;
  std::uint64_t interrupts_ = 0;
  std::map<const std::byte*, const Region*> regions_by_base_;  // every client's
  std::uint64_t next_shared_id_ = 1;
  DescriptorReserve reserve_;
  bool refusing_at_limit_ = false;  // logged once per episode
  std::function<void()> on_detach_;
  GuestRegionFile* guest_region_ = nullptr;
  std::uint64_t guest_wakeup_ = 0;
  bool guest_slots_claimed_ = false;
  CpuPlacement placement_;
  unsigned turns_since_placement_ = 0;
  EventLoop::Clock::time_point last_look_{};
  std::uint64_t stream_requests_seen_ = 0;
  EventLoop::Clock::time_point stream_seen_at_{};
};

}  // namespace ernic::emu
