#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/fabric.h"
#include "engine/verbs.h"
#include "frontend/device.h"
#include "frontend/shm_protocol.h"

namespace ernic::emu {

// A process's handle on an instance in another process, through the shared-memory front end.
class ShmClient final : public Device {
 public:
  // Throws std::runtime_error naming the socket when the instance cannot be reached.
  explicit ShmClient(const std::string& socket_path);
  ~ShmClient() override;
  ShmClient(const ShmClient&) = delete;
  ShmClient& operator=(const ShmClient&) = delete;

  NodeId node() const { return node_; }
  pid_t instance_pid() const override { return instance_pid_; }
  const std::vector<std::string>& gids() const override { return gids_; }
  const std::string& mac() const { return mac_; }

  // Shared memory (memfd) the instance maps; work requests use its addresses as they are.
  Memory allocate(std::size_t size) override;
  std::uint32_t alloc_pd() override;
  MemoryKeys reg_mr(std::uint32_t pd, const Memory& memory, std::size_t offset, std::size_t length,
                    std::uint32_t access) override;
  std::uint32_t create_cq() override;
  std::uint32_t create_qp(std::uint32_t pd, std::uint32_t send_cq, std::uint32_t recv_cq) override;
  void modify_qp(std::uint32_t qpn, const QpAttributes& attributes) override;
  void destroy_qp(std::uint32_t qpn);

  void post_send(std::uint32_t qpn, const SendWr& wr) override;
  void post_recv(std::uint32_t qpn, const RecvWr& wr) override;
  void post_nop(std::uint32_t cq, std::uint64_t wr_id);
  std::size_t poll_cq(std::uint32_t cq, std::span<Completion> out) override;
  // Waits for any completion: spins for `spin`, then blocks on the completion eventfd.
  // Returns false on timeout; throws when the instance went away.
  bool wait(std::chrono::microseconds spin, std::chrono::milliseconds timeout) override;
  // Asks the instance to wake this client when an RDMA WRITE lands in [data, data + size)
  // (memory this client allocated); size 0 stops watching.
  void watch_writes(const std::byte* data, std::size_t size) override;
  // Waits until `ready()` holds, as wait() does: spins for `spin`, then blocks until a
  // completion or a watched WRITE arrives and looks again. `ready` may read watched memory.
  // Does not spin while this thread is on the CPU the instance's loop last ran on.
  bool wait_until(const std::function<bool()>& ready, std::chrono::microseconds spin,
                  std::chrono::milliseconds timeout) override;
  // The CPU the instance's event loop last ran on, once it has run since this client attached.
  std::optional<int> instance_cpu() const;
  // Requests posted and not yet completed must stay below the completion ring size.
  static constexpr std::uint32_t kMaxOutstanding = shm::kCompletionSlots / 2;

 private:
  std::vector<std::byte> call(shm::Op op, const std::basic_string<std::byte>& body,
                              std::span<const int> fds = {}, std::vector<int>* received = nullptr);
  void submit(const shm::SubmitEntry& entry);
  void ring_doorbell_if_needed();
  bool drain_completions();

  int socket_ = -1;
  int doorbell_fd_ = -1;
  int completion_fd_ = -1;
  shm::Area* area_ = nullptr;
  std::uint32_t presence_calls_ = 0;  // shm::ClientPresence
  NodeId node_ = 0;
  pid_t instance_pid_ = 0;
  std::string mac_;
  std::vector<std::string> gids_;
  std::string path_;
  std::unordered_map<std::uint32_t, std::deque<Completion>> ready_;
  std::vector<std::pair<void*, std::size_t>> mappings_;
};

}  // namespace ernic::emu
