#include "base/file_text.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace ernic {

std::string read_fd_text(int fd) {
  std::string text;
  char buffer[4096];
  while (true) {
    ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got > 0) {
      text.append(buffer, static_cast<size_t>(got));
    } else if (got == 0 || errno != EINTR) {
      return text;
    }
  }
}

std::string read_file_text(const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return {};
  }
  std::string text = read_fd_text(fd);
  ::close(fd);
  return text;
}

}  // namespace ernic
