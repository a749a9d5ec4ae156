#include "history/history_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string_view>

#include "base/durable_file.h"

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

// Writes all of `data` (one write(2) unless the file system cuts it short); the errno of the
// first failure, or 0.
int write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t written = ::write(fd, data.data(), data.size());
    if (written < 0) {
      if (errno == EINTR) {
        continue;
      }
      return errno;
    }
    data.remove_prefix(static_cast<std::size_t>(written));
  }
  return 0;
}

// Where the last line of the file starts: just after its last newline, or 0.
off_t start_of_last_line(int fd, off_t size, const std::filesystem::path& path) {
  char buffer[65536];
  for (off_t end = size; end > 0;) {
    off_t begin = std::max<off_t>(0, end - static_cast<off_t>(sizeof buffer));
    auto wanted = static_cast<std::size_t>(end - begin);
    if (::pread(fd, buffer, wanted, begin) != static_cast<ssize_t>(wanted)) {
      throw file_error("cannot read", path);
    }
    for (std::size_t i = wanted; i-- > 0;) {
      if (buffer[i] == '\n') {
        return begin + static_cast<off_t>(i) + 1;
      }
    }
    end = begin;
  }
  return 0;
}

// A file that does not end in a newline was left by a writer that died in the middle of its
// append (or edited by hand). Readers would warn about that line forever and the next record
// would be glued to it, so the tail is mended first: a whole record gets its newline, a torn
// one is cut off. Returns what was done, "" when nothing was needed.
std::string repair_torn_tail(int fd, const std::filesystem::path& path) {
  off_t size = ::lseek(fd, 0, SEEK_END);
  char last = '\n';
  if (size <= 0 || ::pread(fd, &last, 1, size - 1) != 1 || last == '\n') {
    return "";
  }
  off_t line_start = start_of_last_line(fd, size, path);
  std::string tail(static_cast<std::size_t>(size - line_start), '\0');
  if (::pread(fd, tail.data(), tail.size(), line_start) != static_cast<ssize_t>(tail.size())) {
    throw file_error("cannot read", path);
  }
  std::string ignored;
  if (parse_history_line(tail, ignored)) {
    if (int error = write_all(fd, "\n"); error != 0) {
      errno = error;
      throw file_error("cannot write", path);
    }
    return fmt::format("{}: the last record had no final newline; added one", path.string());
  }
  if (::ftruncate(fd, line_start) != 0) {
    throw file_error("cannot repair", path);
  }
  return fmt::format(
      "{}: removed a torn record of {} bytes at the end of the file (a writer stopped in the "
      "middle of its append)",
      path.string(), tail.size());
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

HistoryAppend append_history_record(const std::filesystem::path& path,
                                    const nlohmann::json& record) {
  ensure_parent(path);
  std::string line = serialize_history_record(record) + "\n";
  LockedHistory history(path);
  HistoryAppend append{.repair = repair_torn_tail(history.fd(), path)};
  off_t before = ::lseek(history.fd(), 0, SEEK_END);
  if (before < 0) {
    throw file_error("cannot append to", path);
  }
  int error = write_all(history.fd(), line);
  if (error == 0 && ::fsync(history.fd()) != 0) {
    error = errno;
  }
  if (error != 0) {
    // A full disk takes part of the line: cut it off again, so the file is as it was (and not
    // torn for every reader after). Shrinking needs no space.
    if (::ftruncate(history.fd(), before) == 0) {
      ::fsync(history.fd());
    }
    errno = error;
    throw file_error("cannot append to", path);
  }
  if (before == 0) {
    sync_parent_directory(path);  // the file may be new: its name must survive a crash too
  }
  return append;
}

HistoryAppend append_history_record(const std::filesystem::path& path,
                                    const HistoryRecord& record) {
  return append_history_record(path, nlohmann::json(record));
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
  write_file_durably(path, text, {.durability = Durability::kRecord});
}

}  // namespace ernic
