#pragma once

#include <cstdio>
#include <mutex>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace ernic::emu {

enum class LogLevel { kNone, kError, kWarn, kInfo, kDebug };

// Parses none|error|warn|info|debug.
bool parse_log_level(std::string_view text, LogLevel& level);

// Timestamped lines to a file (or stderr), flushed per line so that a supervisor tailing the
// file sees the readiness line and the last words of a dying instance.
class Logger {
 public:
  Logger() = default;
  ~Logger();
  Logger(const Logger&) = delete;
  Logger& operator=(const Logger&) = delete;

  // Empty path: stderr. Throws std::runtime_error when the file cannot be opened.
  void open(const std::string& path, LogLevel level);
  LogLevel level() const { return level_; }
  void write(LogLevel level, std::string_view message);

  template <typename... Args>
  void error(fmt::format_string<Args...> f, Args&&... args) {
    log(LogLevel::kError, f, std::forward<Args>(args)...);
  }
  template <typename... Args>
  void warn(fmt::format_string<Args...> f, Args&&... args) {
    log(LogLevel::kWarn, f, std::forward<Args>(args)...);
  }
  template <typename... Args>
  void info(fmt::format_string<Args...> f, Args&&... args) {
    log(LogLevel::kInfo, f, std::forward<Args>(args)...);
  }
  template <typename... Args>
  void debug(fmt::format_string<Args...> f, Args&&... args) {
    log(LogLevel::kDebug, f, std::forward<Args>(args)...);
  }

 private:
  template <typename... Args>
  void log(LogLevel level, fmt::format_string<Args...> f, Args&&... args) {
    if (level <= level_) {
      write(level, fmt::format(f, std::forward<Args>(args)...));
    }
  }
  std::FILE* file_ = stderr;
  bool owned_ = false;
  LogLevel level_ = LogLevel::kInfo;
  std::mutex mutex_;
};

}  // namespace ernic::emu
