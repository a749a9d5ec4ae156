#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/engine.h"
#include "frontend/device.h"
#include "mesh/mesh_fabric.h"
#include "runtime/event_loop.h"
#include "runtime/instance.h"
#include "runtime/log.h"

namespace ernic::emu {

// An instance (mesh and engine) in the caller's own process, whose event loop runs inside the
// caller's waits: the emulator's design calls it the in-process front end. A load generator
// that holds one is a single thread doing the instance's work and its own, so a latency test
// between two of them is two processes (the TCP ping-pong's count) where the shared-memory
// front end makes it four: what is left is the engine and the mesh, without the hand-offs
// between a guest's process and its instance. Mesh backends only.
class InLoopDevice final : public Device {
 public:
  // Brings the instance into the mesh (a worker: registered, with the topology); throws when
  // that fails or takes longer than `startup`.
  InLoopDevice(const InstanceConfig& config, std::chrono::seconds startup);
  ~InLoopDevice() override;
  InLoopDevice(const InLoopDevice&) = delete;
  InLoopDevice& operator=(const InLoopDevice&) = delete;

  const std::vector<std::string>& gids() const override { return gids_; }
  pid_t instance_pid() const override { return 0; }

  Memory allocate(std::size_t size) override;
  std::uint32_t alloc_pd() override { return engine_.alloc_pd(); }
  MemoryKeys reg_mr(std::uint32_t pd, const Memory& memory, std::size_t offset, std::size_t length,
                    std::uint32_t access) override;
  std::uint32_t create_cq() override;
  std::uint32_t create_qp(std::uint32_t pd, std::uint32_t send_cq, std::uint32_t recv_cq) override {
    return engine_.create_qp(pd, send_cq, recv_cq);
  }
  void modify_qp(std::uint32_t qpn, const QpAttributes& attributes) override {
    engine_.modify_qp(qpn, attributes);
  }

  void post_send(std::uint32_t qpn, const SendWr& wr) override;
  // A receive sends nothing: no flush.
  void post_recv(std::uint32_t qpn, const RecvWr& wr) override { engine_.post_recv(qpn, wr); }
  std::size_t poll_cq(std::uint32_t cq, std::span<Completion> out) override;
  // The loop's own spin window (the instance's configuration) stands for `spin`.
  bool wait(std::chrono::microseconds spin, std::chrono::milliseconds timeout) override;
  // Every turn of the loop asks `ready` again, so there is nothing to watch.
  void watch_writes(const std::byte*, std::size_t) override {}
  bool wait_until(const std::function<bool()>& ready, std::chrono::microseconds spin,
                  std::chrono::milliseconds timeout) override;
  bool wait_readable(int fd, std::chrono::steady_clock::time_point deadline) override;

 private:
  // Runs the loop until `done()`; throws once the mesh has failed for good.
  bool run_until(const std::function<bool()>& done, std::chrono::steady_clock::time_point deadline);

  std::vector<std::string> gids_;
  Logger log_;
  EventLoop loop_;
  MeshFabric mesh_;
  Engine engine_;
  bool ready_ = false;
  std::string fatal_;
  std::unordered_map<std::uint32_t, std::deque<Completion>> completions_;
  std::size_t completions_waiting_ = 0;
  std::vector<std::pair<void*, std::size_t>> mappings_;
};

}  // namespace ernic::emu
