#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "engine/wire.h"
#include "frontend/guest_region.h"
#include "frontend/shm_protocol.h"

namespace ernic::verbs {

// The provider's connection to its instance through the shared-memory front end: control calls
// over the UNIX socket, work requests and completions through the rings the instance maps. Or,
// in a QEMU guest (or a test standing in for one), through a guest region (frontend/
// guest_region.h): a slot of it holds the rings and a mailbox for the control calls, and a
// thread keeps the slot's lease. Every call answers an errno (0 on success), as the verbs calls
// it serves return them.
class InstanceChannel {
 public:
  struct Identity {
    std::uint32_t node = 0;
    std::uint32_t pid = 0;
    std::string mac;
    std::vector<std::string> gids;
  };

  InstanceChannel() = default;
  ~InstanceChannel();
  InstanceChannel(const InstanceChannel&) = delete;
  InstanceChannel& operator=(const InstanceChannel&) = delete;

  // Attaches to the instance listening at `socket_path`; `why` says what failed.
  int open(const std::string& socket_path, Identity& identity, std::string& why);
  // Attaches through the guest region mapped from `region_path` (a shared-memory file, or an
  // ivshmem device's resource2 in a guest).
  int open_region(const std::string& region_path, Identity& identity, std::string& why);
  // One request and its answer; `answer` receives the body after the status.
  int call(emu::shm::Op op, std::span<const std::byte> body, std::span<const int> fds = {},
           std::vector<std::byte>* answer = nullptr);
  // The text the instance gave with the last failed call.
  const std::string& last_error() const { return last_error_; }

  emu::shm::Area& area() { return *area_; }
  // -1 through a guest region: nothing rings, the program polls.
  int completion_fd() const { return completion_fd_; }
  // Through a guest region: where registered memory goes (SharedPages), else null and -1.
  std::byte* region_base() const { return region_; }
  int region_fd() const { return region_fd_; }
  // Wakes the instance if it said it is about to block.
  void ring_doorbell_if_needed();
  // False once the instance closed its end (it exited or was killed). Costs a system call.
  bool instance_alive();

 private:
  // The open call's answer: the instance's node, pid, MAC and GIDs; EPROTO when malformed.
  static int read_identity(emu::ByteReader& r, Identity& identity, const std::string& instance,
                           std::string& why);
  int call_through_mailbox(std::span<const std::byte> message, std::vector<std::byte>& data);
  void keep_lease();
  bool region_instance_alive();
  void close_region();

  int socket_ = -1;
  int doorbell_fd_ = -1;
  int completion_fd_ = -1;
  emu::shm::Area* area_ = nullptr;
  std::string path_;
  std::string last_error_;
  // Through a guest region.
  int region_fd_ = -1;
  std::byte* region_ = nullptr;
  std::uint64_t region_size_ = 0;
  emu::region::Slot* slot_ = nullptr;
  std::uint64_t owner_ = 0;
  std::uint64_t epoch_ = 0;
  std::uint64_t instance_beat_seen_ = 0;
  std::chrono::steady_clock::time_point instance_beat_at_{};
  std::thread lease_;
  std::mutex lease_mutex_;
  std::condition_variable lease_stop_;
  bool stopping_ = false;
};

}  // namespace ernic::verbs
