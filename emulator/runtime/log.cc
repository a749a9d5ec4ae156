#include "runtime/log.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <stdexcept>

namespace ernic::emu {

bool parse_log_level(std::string_view text, LogLevel& level) {
  static constexpr std::pair<std::string_view, LogLevel> kLevels[] = {{"none", LogLevel::kNone},
                                                                      {"error", LogLevel::kError},
                                                                      {"warn", LogLevel::kWarn},
                                                                      {"info", LogLevel::kInfo},
                                                                      {"debug", LogLevel::kDebug}};
  for (const auto& [name, value] : kLevels) {
    if (text == name) {
      level = value;
      return true;
    }
  }
  return false;
}

Logger::~Logger() {
  if (owned_) {
    std::fclose(file_);
  }
}

void Logger::open(const std::string& path, LogLevel level) {
  level_ = level;
  if (path.empty()) {
    return;
  }
  std::FILE* f = std::fopen(path.c_str(), "a");
  if (f == nullptr) {
    throw std::runtime_error(
        fmt::format("cannot open log file {}: {}", path, std::strerror(errno)));
  }
  file_ = f;
  owned_ = true;
}

void Logger::write(LogLevel level, std::string_view message) {
  static constexpr const char* kNames[] = {"", "error", "warn", "info", "debug"};
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() %
      1000000;
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
  std::lock_guard lock(mutex_);
  fmt::print(file_, "{}.{:06d}Z {} {}\n", stamp, micros, kNames[static_cast<int>(level)], message);
  std::fflush(file_);
}

}  // namespace ernic::emu
