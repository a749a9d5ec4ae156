#include "runtime/descriptor_reserve.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace ernic::emu {
namespace {
int open_spare() {
  return ::open("/dev/null", O_RDONLY | O_CLOEXEC);
}
}  // namespace

DescriptorReserve::DescriptorReserve() : spare_(open_spare()) {}

DescriptorReserve::~DescriptorReserve() {
  if (spare_ >= 0) {
    ::close(spare_);
  }
}

bool DescriptorReserve::at_limit(int error) {
  return error == EMFILE || error == ENFILE;
}

bool DescriptorReserve::refuse_one(int listen_fd) {
  if (spare_ >= 0) {
    ::close(spare_);
    spare_ = -1;
  }
  const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd >= 0) {
    ::close(fd);
  }
  spare_ = open_spare();
  return fd >= 0;
}

}  // namespace ernic::emu
