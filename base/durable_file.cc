#include "base/durable_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <functional>
#include <string>
#include <utility>

namespace ernic {
namespace {

namespace fs = std::filesystem;

FileWriteError write_error(const fs::path& path, int error) {
  return FileWriteError(fmt::format("cannot write {}: {}", path.string(), std::strerror(error)));
}

fs::path directory_of(const fs::path& path) {
  return path.has_parent_path() ? path.parent_path() : fs::path(".");
}

// An open temporary beside the target, named NAME.tmp.PID.N: the pid and a per-process counter
// keep concurrent writers (other processes, other threads) apart, and O_EXCL steps over a name
// that a killed writer with the same pid left behind. Removed unless released by the rename.
class Temporary {
 public:
  // open_error() says whether it could be created.
  explicit Temporary(const fs::path& target) {
    static std::atomic<unsigned> counter{0};
    for (;;) {
      path_ = target;
      path_ += fmt::format(".tmp.{}.{}", ::getpid(), counter++);
      fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd_ >= 0) {
        return;
      }
      if (errno != EEXIST) {
        open_error_ = errno;
        path_.clear();
        return;
      }
    }
  }
  int open_error() const { return open_error_; }
  ~Temporary() {
    close_quietly();
    if (!path_.empty()) {
      ::unlink(path_.c_str());
    }
  }
  Temporary(const Temporary&) = delete;
  Temporary& operator=(const Temporary&) = delete;

  int fd() const { return fd_; }
  const fs::path& path() const { return path_; }

  // Closes the file; the error close(2) reports (NFS reports failed writes there), or 0.
  int close() {
    int result = ::close(fd_);
    fd_ = -1;
    return result == 0 ? 0 : errno;
  }
  void release() { path_.clear(); }

 private:
  void close_quietly() {
    if (fd_ >= 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }

  fs::path path_;
  int fd_ = -1;
  int open_error_ = 0;
};

// Writes all of `content`; the errno of the first failed write(2), or 0.
int write_all(int fd, std::string_view content) {
  while (!content.empty()) {
    ssize_t written = ::write(fd, content.data(), content.size());
    if (written < 0) {
      if (errno == EINTR) {
        continue;
      }
      return errno;
    }
    content.remove_prefix(static_cast<std::size_t>(written));
  }
  return 0;
}

int fsync_retrying(int fd) {
  while (::fsync(fd) != 0) {
    if (errno != EINTR) {
      return errno;
    }
  }
  return 0;
}

}  // namespace

// The errno of opening or syncing the directory that holds `path`, or 0.
int sync_directory_of(const fs::path& path) {
  int fd = ::open(directory_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    return errno;
  }
  int error = fsync_retrying(fd);
  ::close(fd);
  return error;
}

void sync_parent_directory(const fs::path& path) {
  if (int error = sync_directory_of(path); error != 0) {
    throw write_error(path, error);
  }
}

namespace {

// No exception of its own on the way: a writer that only reports (an instance's stats file)
// comes here at the descriptor limit, where a sanitizer's runtime cannot even check an
// exception's type. One that `next_part` throws removes the temporary and passes on.
using PartViews = std::function<bool(std::string_view& part)>;

std::string write_parts_or_reason(const fs::path& path, const PartViews& next_part,
                                  const DurableWriteOptions& options) {
  const auto reason = [&](int error) {
    return fmt::format("cannot write {}: {}", path.string(), std::strerror(error));
  };
  if (path.has_parent_path()) {
    std::error_code failed;
    fs::create_directories(path.parent_path(), failed);
    if (failed) {
      return fmt::format("cannot write {}: cannot create {}: {}", path.string(),
                         path.parent_path().string(), failed.message());
    }
  }
  Temporary temporary(path);
  if (temporary.open_error() != 0) {
    return reason(temporary.open_error());
  }
  int error = 0;
  std::string_view part;
  while (error == 0 && next_part(part)) {
    error = write_all(temporary.fd(), part);
  }
  if (error == 0 && options.permissions &&
      ::fchmod(temporary.fd(), static_cast<mode_t>(*options.permissions)) != 0) {
    error = errno;
  }
  if (error == 0 && options.durability == Durability::kRecord) {
    error = fsync_retrying(temporary.fd());
  }
  if (error == 0) {
    error = temporary.close();
  }
  if (error == 0 && ::rename(temporary.path().c_str(), path.c_str()) != 0) {
    error = errno;
  }
  if (error != 0) {
    return reason(error);
  }
  temporary.release();
  if (options.durability == Durability::kRecord) {
    if (int synced = sync_directory_of(path); synced != 0) {
      return reason(synced);
    }
  }
  return "";
}

}  // namespace

std::string write_file_durably_or_reason(const fs::path& path, std::string_view content,
                                         const DurableWriteOptions& options) {
  bool given = false;
  return write_parts_or_reason(
      path,
      [&](std::string_view& part) {
        part = content;
        return !std::exchange(given, true);
      },
      options);
}

void write_file_durably_in_parts(const fs::path& path, const ContentParts& next_part,
                                 const DurableWriteOptions& options) {
  std::string buffer;
  const auto views = [&](std::string_view& part) {
    if (!next_part(buffer)) {
      return false;
    }
    part = buffer;
    return true;
  };
  if (std::string reason = write_parts_or_reason(path, views, options); !reason.empty()) {
    throw FileWriteError(reason);
  }
}

void write_file_durably(const fs::path& path, std::string_view content,
                        const DurableWriteOptions& options) {
  if (std::string reason = write_file_durably_or_reason(path, content, options); !reason.empty()) {
    throw FileWriteError(reason);
  }
}

}  // namespace ernic
