#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "frontend/shm_protocol.h"

namespace ernic::verbs {

// The provider's connection to its instance through the shared-memory front end: control calls
// over the UNIX socket, work requests and completions through the rings the instance maps.
// Every call answers an errno (0 on success), as the verbs calls it serves return them.
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
  // One request and its answer; `answer` receives the body after the status.
  int call(emu::shm::Op op, std::span<const std::byte> body, std::span<const int> fds = {},
           std::vector<std::byte>* answer = nullptr);
  // The text the instance gave with the last failed call.
  const std::string& last_error() const { return last_error_; }

  emu::shm::Area& area() { return *area_; }
  int completion_fd() const { return completion_fd_; }
  // Wakes the instance if it said it is about to block.
  void ring_doorbell_if_needed();
  // False once the instance closed its end (it exited or was killed). Costs a system call.
  bool instance_alive();

 private:
  int socket_ = -1;
  int doorbell_fd_ = -1;
  int completion_fd_ = -1;
  emu::shm::Area* area_ = nullptr;
  std::string path_;
  std::string last_error_;
};

}  // namespace ernic::verbs
