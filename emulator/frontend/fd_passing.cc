#include "frontend/fd_passing.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "frontend/shm_protocol.h"

namespace ernic::emu {
namespace {
constexpr std::size_t kMaxFds = 8;
}

ssize_t send_with_fds(int socket, const iovec* iov, int count, std::span<const int> fds) {
  msghdr msg{};
  msg.msg_iov = const_cast<iovec*>(iov);
  msg.msg_iovlen = static_cast<std::size_t>(count);
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)] = {};
  if (!fds.empty()) {
    if (fds.size() > kMaxFds) {
      errno = EINVAL;
      return -1;
    }
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(cmsg), fds.data(), sizeof(int) * fds.size());
  }
  return sendmsg(socket, &msg, MSG_NOSIGNAL);
}

bool send_message(int socket, std::span<const std::byte> data, std::span<const int> fds) {
  iovec iov{const_cast<std::byte*>(data.data()), data.size()};
  while (true) {
    const ssize_t n = send_with_fds(socket, &iov, 1, fds);
    if (n >= 0) {
      return static_cast<std::size_t>(n) == data.size();
    }
    if (errno != EINTR) {
      return false;
    }
  }
}

long receive_message(int socket, std::vector<std::byte>& data, std::vector<int>& fds) {
  data.resize(shm::kMaxControlMessage);
  iovec iov{data.data(), data.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)] = {};
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n = 0;
  do {
    n = recvmsg(socket, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    data.clear();
    return -1;
  }
  for (cmsghdr* cmsg = CMSG_FIRSTHDR(&msg); cmsg != nullptr; cmsg = CMSG_NXTHDR(&msg, cmsg)) {
    if (cmsg->cmsg_level == SOL_SOCKET && cmsg->cmsg_type == SCM_RIGHTS) {
      const std::size_t count = (cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (std::size_t i = 0; i < count; ++i) {
        int fd = -1;
        std::memcpy(&fd, CMSG_DATA(cmsg) + i * sizeof(int), sizeof(int));
        fds.push_back(fd);
      }
    }
  }
  data.resize(static_cast<std::size_t>(n));
  return n;
}

}  // namespace ernic::emu
