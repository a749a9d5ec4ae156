#include "hosts/local_host.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sched.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "base/durable_file.h"
#include "hosts/process_command.h"

namespace ernic {
namespace {

std::string netns_path(const std::string& netns) {
  return netns.empty() ? "" : "/run/netns/" + netns;
}

std::string read_fd(int fd) {
  std::string text;
  char buffer[16384];
  off_t offset = 0;
  for (;;) {
    ssize_t n = ::pread(fd, buffer, sizeof buffer, offset);
    if (n <= 0) {
      break;
    }
    text.append(buffer, static_cast<std::size_t>(n));
    offset += n;
  }
  return text;
}

}  // namespace

bool proc_net_tcp_listens(std::string_view table, std::uint16_t port) {
  std::string wanted = fmt::format(":{:04X}", port);
  std::istringstream lines{std::string(table)};
  std::string line;
  std::getline(lines, line);  // header
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state;
    fields >> slot >> local >> remote >> state;
    if (state == "0A" && local.size() >= wanted.size() &&
        local.compare(local.size() - wanted.size(), wanted.size(), wanted) == 0) {
      return true;
    }
  }
  return false;
}

bool program_in_path(const std::string& program) {
  if (program.find('/') != std::string::npos) {
    return ::access(program.c_str(), X_OK) == 0;
  }
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/local/bin:/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    auto candidate = std::filesystem::path(dir.empty() ? "." : dir) / program;
    if (::access(candidate.c_str(), X_OK) == 0 && !std::filesystem::is_directory(candidate)) {
      return true;
    }
  }
  return false;
}

LocalHost::LocalHost(std::string name, std::string address, std::string netns)
    : name_(std::move(name)), address_(std::move(address)), netns_(std::move(netns)) {
  auto open_tables = [this] {
    tcp_fd_ = ::open("/proc/thread-self/net/tcp", O_RDONLY | O_CLOEXEC);
    tcp6_fd_ = ::open("/proc/thread-self/net/tcp6", O_RDONLY | O_CLOEXEC);
  };
  if (netns_.empty()) {
    open_tables();
    return;
  }
  // setns() moves only the calling thread, so a short-lived thread enters the namespace and
  // opens its tables; the open files keep showing that namespace.
  std::thread opener([&] {
    int fd = ::open(netns_path(netns_).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0 && ::setns(fd, CLONE_NEWNET) == 0) {
      open_tables();
    }
    if (fd >= 0) {
      ::close(fd);
    }
  });
  opener.join();
}

LocalHost::~LocalHost() {
  if (tcp_fd_ >= 0) {
    ::close(tcp_fd_);
  }
  if (tcp6_fd_ >= 0) {
    ::close(tcp6_fd_);
  }
}

std::string LocalHost::describe() const {
  if (netns_.empty()) {
    return fmt::format("{} (this machine, {})", name_, address_);
  }
  return fmt::format("{} (netns {}, {})", name_, netns_, address_);
}

std::unique_ptr<RunningCommand> LocalHost::start(const CommandSpec& spec, OutputSink* sink) {
  return std::make_unique<ProcessCommand>(spec, sink, netns_path(netns_));
}

void LocalHost::upload(std::string_view content, const std::string& path, int mode) {
  // The namespace shares this machine's filesystem. Uploads are scripts and configuration a
  // step is about to run, not records: no sync.
  try {
    write_file_durably(path, content,
                       {.durability = Durability::kDerived,
                        .permissions = static_cast<std::filesystem::perms>(mode)});
  } catch (const FileWriteError& e) {
    throw std::runtime_error(fmt::format("{}: {}", name_, e.what()));
  }
}

bool LocalHost::is_listening(std::uint16_t port) {
  return (tcp_fd_ >= 0 && proc_net_tcp_listens(read_fd(tcp_fd_), port)) ||
         (tcp6_fd_ >= 0 && proc_net_tcp_listens(read_fd(tcp6_fd_), port));
}

std::string LocalHost::check_alive() {
  if (!netns_.empty() && !std::filesystem::exists(netns_path(netns_))) {
    return fmt::format("network namespace {} of host {} is gone", netns_, name_);
  }
  return "";
}

bool LocalHost::has_program(const std::string& program) {
  return program_in_path(program);
}

}  // namespace ernic
