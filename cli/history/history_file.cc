#include "history/history_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace ernic {
namespace {

std::runtime_error file_error(const std::string& what, const std::filesystem::path& path) {
  return std::runtime_error(fmt::format("{} {}: {}", what, path.string(), std::strerror(errno)));
}

// The history file opened and exclusively flock(2)ed for as long as this lives. The lock is on
// the file itself, so nothing is left beside it. Rewrites replace the file by rename(2): a
// writer that waited for the lock on the replaced file would write into a file no longer in the
// directory, so after locking it checks that the path still names the locked file, and opens the
// new one otherwise.
class LockedHistory {
 public:
  explicit LockedHistory(const std::filesystem::path& path) {
    for (;;) {
      fd_ = ::open(path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
      if (fd_ < 0) {
        throw file_error("cannot open history", path);
      }
      while (::flock(fd_, LOCK_EX) != 0) {
        if (errno != EINTR) {
          int saved = errno;
          ::close(fd_);
          errno = saved;
          throw file_error("cannot lock", path);
        }
      }
      struct stat held {};
      struct stat named {};
      if (::fstat(fd_, &held) == 0 && ::stat(path.c_str(), &named) == 0 &&
          held.st_dev == named.st_dev && held.st_ino == named.st_ino) {
        return;
      }
      ::close(fd_);  // replaced (or removed) while we waited: lock the file the path names now
    }
  }
  ~LockedHistory() { ::close(fd_); }  // closing releases the lock
  LockedHistory(const LockedHistory&) = delete;
  LockedHistory& operator=(const LockedHistory&) = delete;

  int fd() const { return fd_; }

 private:
  int fd_ = -1;
};

void write_all(int fd, const std::string& data, const std::filesystem::path& path) {
  std::size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      throw file_error("cannot write", path);
    }
    done += static_cast<std::size_t>(n);
  }
}

bool ends_with_newline_or_empty(int fd) {
  off_t size = ::lseek(fd, 0, SEEK_END);
  if (size <= 0) {
    return true;
  }
  char last = '\n';
  if (::pread(fd, &last, 1, size - 1) != 1) {
    return true;
  }
  return last == '\n';
}

void ensure_parent(const std::filesystem::path& path) {
  auto parent = path.parent_path();
  if (!parent.empty()) {
    std::filesystem::create_directories(parent);
  }
}

HistoryContents read_unlocked(const std::filesystem::path& path) {
  HistoryContents contents;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return contents;
  }
  std::string text;
  int number = 0;
  while (std::getline(in, text)) {
    ++number;
    if (text.empty()) {
      continue;
    }
    HistoryLine line{number, text, std::nullopt};
    std::string error;
    line.record = parse_history_line(text, error);
    if (!line.record) {
      contents.warnings.push_back(fmt::format("{}:{}: {}; skipped", path.string(), number, error));
    }
    contents.lines.push_back(std::move(line));
  }
  return contents;
}

}  // namespace

std::vector<nlohmann::json> HistoryContents::records() const {
  std::vector<nlohmann::json> out;
  for (const auto& line : lines) {
    if (line.record) {
      out.push_back(*line.record);
    }
  }
  return out;
}

std::string serialize_history_record(const nlohmann::json& record) {
  // nlohmann::json objects are std::map based, so keys come out sorted as rocm-ernic writes them.
  // Invalid UTF-8 from a tool's output is replaced rather than failing the whole record.
  return record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void append_history_record(const std::filesystem::path& path, const nlohmann::json& record) {
  ensure_parent(path);
  std::string line = serialize_history_record(record) + "\n";
  LockedHistory history(path);
  if (!ends_with_newline_or_empty(history.fd())) {
    line.insert(line.begin(), '\n');  // another writer died mid-line: keep our record whole
  }
  write_all(history.fd(), line, path);
  if (::fsync(history.fd()) != 0) {
    throw file_error("cannot sync", path);
  }
}

void append_history_record(const std::filesystem::path& path, const HistoryRecord& record) {
  append_history_record(path, nlohmann::json(record));
}

HistoryContents read_history(const std::filesystem::path& path) {
  if (!std::filesystem::exists(path)) {
    return {};
  }
  return read_unlocked(path);
}

void rewrite_history(const std::filesystem::path& path,
                     const std::function<std::vector<std::string>(const HistoryContents&)>& edit) {
  ensure_parent(path);
  LockedHistory history(path);
  auto lines = edit(read_unlocked(path));
  std::string text;
  for (const auto& line : lines) {
    text += line;
    text += '\n';
  }
  auto temp = path;
  temp += fmt::format(".tmp.{}", ::getpid());
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw file_error("cannot create", temp);
  }
  try {
    write_all(fd, text, temp);
    if (::fsync(fd) != 0) {
      throw file_error("cannot sync", temp);
    }
  } catch (...) {
    ::close(fd);
    std::filesystem::remove(temp);
    throw;
  }
  ::close(fd);
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    std::filesystem::remove(temp);
    throw file_error("cannot replace", path);
  }
}

}  // namespace ernic
