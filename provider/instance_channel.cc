#include "instance_channel.h"

#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "engine/wire.h"
#include "frontend/fd_passing.h"

namespace ernic::verbs {

InstanceChannel::~InstanceChannel() {
  if (region_ != nullptr) {
    close_region();
  } else if (area_ != nullptr) {
    munmap(area_, sizeof(emu::shm::Area));
  }
  for (int fd : {doorbell_fd_, completion_fd_, socket_}) {
    if (fd >= 0) {
      close(fd);
    }
  }
}

int InstanceChannel::open(const std::string& socket_path, Identity& identity, std::string& why) {
  path_ = socket_path;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.empty() || socket_path.size() >= sizeof addr.sun_path) {
    why = "the instance's socket path is empty or too long: '" + socket_path + "'";
    return EINVAL;
  }
  std::memcpy(addr.sun_path, socket_path.data(), socket_path.size());
  socket_ = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (socket_ < 0 || connect(socket_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    const int error = errno;
    why = "cannot attach to the ERNIC instance at " + socket_path + ": " + std::strerror(error);
    return error == ENOENT || error == ECONNREFUSED ? ENODEV : error;
  }
  // The open call is the only one whose answer carries descriptors: the rings and two eventfds.
  emu::ByteWriter request;
  request.u32(static_cast<std::uint32_t>(emu::shm::Op::kOpen));
  request.u32(emu::shm::kProtocolVersion);
  std::vector<std::byte> answer;
  std::vector<int> received;
  if (!emu::send_message(socket_, request.bytes(), {}) ||
      emu::receive_message(socket_, answer, received) <= 0) {
    why = "the ERNIC instance at " + socket_path + " closed the connection";
    for (int fd : received) {
      close(fd);
    }
    return ENODEV;
  }
  emu::ByteReader r(answer);
  const auto error = static_cast<int>(r.u32());
  const std::string text = r.str();
  if (error != 0 || received.size() != 3) {
    for (int fd : received) {
      close(fd);
    }
    why = "the ERNIC instance at " + socket_path + " refused the device: " + text;
    return error != 0 ? error : EPROTO;
  }
  void* p =
      mmap(nullptr, sizeof(emu::shm::Area), PROT_READ | PROT_WRITE, MAP_SHARED, received[0], 0);
  close(received[0]);
  doorbell_fd_ = received[1];
  completion_fd_ = received[2];
  if (p == MAP_FAILED) {
    const int map_error = errno;
    why = std::string("cannot map the instance's rings: ") + std::strerror(map_error);
    return map_error;
  }
  area_ = static_cast<emu::shm::Area*>(p);
  return read_identity(r, identity, "the ERNIC instance at " + socket_path, why);
}

int InstanceChannel::read_identity(emu::ByteReader& r, Identity& identity,
                                   const std::string& instance, std::string& why) {
  identity.node = r.u32();
  identity.pid = r.u32();
  identity.mac = r.str();
  const std::uint16_t count = r.u16();
  for (std::uint16_t i = 0; i < count; ++i) {
    identity.gids.push_back(r.str());
  }
  if (r.failed()) {
    why = instance + " answered a malformed open";
    return EPROTO;
  }
  return 0;
}
int InstanceChannel::call(emu::shm::Op op, std::span<const std::byte> body,
                          std::span<const int> fds, std::vector<std::byte>* answer) {
  emu::ByteWriter w;
  w.u32(static_cast<std::uint32_t>(op));
  w.raw(body);
  std::vector<std::byte> data;
  if (region_ != nullptr) {
    if (!fds.empty()) {
      last_error_ = "a guest region carries no file descriptors";
      return EOPNOTSUPP;
    }
    if (const int error = call_through_mailbox(w.bytes(), data); error != 0) {
      return error;
    }
  } else {
    if (!emu::send_message(socket_, w.bytes(), fds)) {
      last_error_ = "the ERNIC instance at " + path_ + " went away";
      return ENODEV;
    }
    std::vector<int> received;
    if (emu::receive_message(socket_, data, received) <= 0) {
      last_error_ = "the ERNIC instance at " + path_ + " closed the connection";
      return ENODEV;
    }
    for (int fd : received) {
      close(fd);
    }
  }
  emu::ByteReader r(data);
  const auto status = static_cast<int>(r.u32());
  last_error_ = r.str();
  if (r.failed()) {
    last_error_ = "malformed answer from the ERNIC instance";
    return EPROTO;
  }
  if (status != 0) {
    return status;
  }
  if (answer != nullptr) {
    const std::size_t body_start = 4 + 2 + last_error_.size();
    answer->assign(data.begin() + static_cast<long>(body_start), data.end());
  }
  return 0;
}

void InstanceChannel::ring_doorbell_if_needed() {
  if (region_ != nullptr) {
    return;  // the instance polls a guest region
  }
  if (area_->instance_waiting.value.exchange(0, std::memory_order_seq_cst) != 0) {
    const std::uint64_t one = 1;
    [[maybe_unused]] auto ignored = write(doorbell_fd_, &one, sizeof one);
  }
}

bool InstanceChannel::instance_alive() {
  if (region_ != nullptr) {
    return region_instance_alive();
  }
  // Only the end of the connection counts: an answer arriving for another thread's control call
  // makes the socket readable too.
  pollfd fd{socket_, POLLRDHUP, 0};
  if (poll(&fd, 1, 0) <= 0) {
    return true;
  }
  return (fd.revents & (POLLHUP | POLLRDHUP | POLLERR)) == 0;
}

}  // namespace ernic::verbs
