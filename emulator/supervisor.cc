#include "supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <deque>
#include <fstream>
#include <mutex>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "runtime/instance.h"

namespace ernic::emu {

namespace {

// Readable by the owner only from its creation on: the token is the mesh's one secret.
void write_token_file(const std::filesystem::path& file, const std::string& token) {
  std::filesystem::remove(file);
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0 || ::write(fd, token.data(), token.size()) != static_cast<ssize_t>(token.size())) {
    if (fd >= 0) {
      ::close(fd);
    }
    throw std::runtime_error(fmt::format("cannot write the mesh token file {}", file.string()));
  }
  ::close(fd);
}

}  // namespace

Supervisor::~Supervisor() {
  stop();
}

std::string Supervisor::tail(const std::filesystem::path& file, int count) {
  std::ifstream in(file);
  std::deque<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    lines.push_back(line);
    if (static_cast<int>(lines.size()) > count) {
      lines.pop_front();
    }
  }
  std::string out;
  for (const auto& l : lines) {
    out += "\n  " + l;
  }
  return out.empty() ? " (log is empty)" : out;
}

void Supervisor::launch(InstanceInfo& info, const std::vector<std::string>& args) {
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(config_.executable.c_str()));
  for (const auto& a : args) {
    argv.push_back(const_cast<char*>(a.c_str()));
  }
  argv.push_back(nullptr);
  const std::string log = info.log.string();
  const bool die_with_parent = !config_.may_outlive_parent;
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    throw std::runtime_error(fmt::format("cannot start instance {}: fork failed", info.id));
  }
  if (pid == 0) {
    setpgid(0, 0);
    if (die_with_parent) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) {
        _exit(127);  // the parent died before prctl: nobody would stop this instance
      }
    }
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      // Whatever the instance prints outside its logger (a sanitizer report, a crash) lands in
      // the same file the supervisor quotes.
      dup2(fd, 1);
      dup2(fd, 2);
      close(fd);
    }
    execv(argv[0], argv.data());
    _exit(127);
  }
  setpgid(pid, pid);
  info.pid = pid;
  instances_.push_back(info);
  reaped_.push_back(false);
}

std::string Supervisor::describe_exit(const InstanceInfo& info, int status) const {
  std::string how;
  if (WIFEXITED(status)) {
    how = fmt::format("exited with status {}", WEXITSTATUS(status));
  } else if (WIFSIGNALED(status)) {
    how = fmt::format("was killed by signal {}", WTERMSIG(status));
  } else {
    how = "stopped";
  }
  return fmt::format("instance {} ({}, pid {}) {}; last log lines:{}", info.id, info.role, info.pid,
                     how, tail(info.log, 10));
}

void Supervisor::wait_ready(InstanceInfo& info) {
  const auto deadline = std::chrono::steady_clock::now() + config_.ready_timeout;
  const std::size_t index = instances_.size() - 1;
  static const std::regex kPort("listening on [^ ]*:([0-9]+)");
  while (true) {
    int status = 0;
    if (waitpid(info.pid, &status, WNOHANG) == info.pid) {
      reaped_[index] = true;
      throw std::runtime_error("ERNIC emulator " + describe_exit(info, status));
    }
    std::ifstream in(info.log);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (text.find(kReadyLine) != std::string::npos && std::filesystem::exists(info.socket)) {
      std::smatch m;
      if (info.role == "manager" && std::regex_search(text, m, kPort)) {
        info.mesh_port = static_cast<std::uint16_t>(std::stoi(m[1]));
      }
      instances_[index] = info;
      return;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error(fmt::format(
          "ERNIC emulator instance {} ({}, pid {}) was not ready within {} ms; last log lines:{}",
          info.id, info.role, info.pid, config_.ready_timeout.count(), tail(info.log, 10)));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::filesystem::path guest_region_path(const std::string& run_token, int id) {
  return fmt::format("/dev/shm/ernic-{}-i{}", run_token, id);
}

InstanceInfo planned_instance(const SupervisorConfig& config, int id) {
  InstanceInfo info;
  info.id = id;
  info.role = id == 1 ? "manager" : "worker";
  info.socket = config.dir / fmt::format("ernic{}.sock", id);
  info.log = config.dir / fmt::format("ernic{}.log", id);
  info.stats = config.dir / fmt::format("ernic{}.stats", id);
  info.mac = fmt::format("02:e7:00:00:00:{:02x}", id);
  info.gids = {*link_local_gid(info.mac), fmt::format("192.168.200.{}", 10 * id)};
  info.bind = config.bind;
  info.verbs_sysfs = config.dir / fmt::format("ernic{}-verbs-sysfs", id);
  info.verbs_device = fmt::format("ernic_{}", id);
  if (static_cast<std::size_t>(id) <= config.guest_regions.size()) {
    info.guest_region = config.guest_regions[static_cast<std::size_t>(id) - 1];
  }
  return info;
}

std::filesystem::path token_file_of(const SupervisorConfig& config) {
  return config.token_file.empty() ? config.dir / "mesh.token" : config.token_file;
}

std::vector<std::string> instance_arguments(const SupervisorConfig& config,
                                            const InstanceInfo& info, const std::string& manager) {
  const std::string backend = info.id == 1 ? fmt::format("tcp:manager:listen:{}", config.base_port)
                                           : fmt::format("tcp:worker:{}", manager);
  std::vector<std::string> args = {"emulator",
                                   "--backend",
                                   backend,
                                   "--socket",
                                   info.socket.string(),
                                   "--mac",
                                   info.mac,
                                   "--gids",
                                   fmt::format("{},{}", info.gids[0], info.gids[1]),
                                   "--stats-file",
                                   info.stats.string(),
                                   "--verbs-sysfs",
                                   info.verbs_sysfs.string(),
                                   "--verbs-name",
                                   info.verbs_device};
  if (!info.guest_region.empty()) {
    args.insert(args.end(), {"--guest-region", info.guest_region.string()});
  }
  if (!config.log_to_stderr) {
    args.insert(args.end(), {"--log-file", info.log.string()});
  }
  args.insert(args.end(), {"--log-level", config.log_level, "--token-file",
                           token_file_of(config).string(), "--bind", info.bind});
  args.insert(args.end(), config.extra_args.begin(), config.extra_args.end());
  return args;
}

void Supervisor::start(const SupervisorConfig& config) {
  stop();
  instances_.clear();
  reaped_.clear();
  first_exit_.clear();
  config_ = config;
  if (config.instances < 1) {
    throw std::runtime_error("an embedded emulator needs at least one instance");
  }
  if (config.token.empty()) {
    throw std::runtime_error("the embedded emulator mesh needs a token");
  }
  std::filesystem::create_directories(config.dir);
  write_token_file(token_file_of(config), config.token);
  try {
    for (int id = 1; id <= config.instances; ++id) {
      InstanceInfo info = planned_instance(config, id);
      std::filesystem::remove(info.socket);
      std::filesystem::remove(info.log);
      auto args = instance_arguments(
          config, info,
          id == 1 ? "" : fmt::format("{}:{}", config.bind, instances_.front().mesh_port));
      launch(info, args);
      wait_ready(info);
    }
  } catch (...) {
    stop();
    throw;
  }
}

std::map<std::string, std::string> Supervisor::read_stats(const std::filesystem::path& file) {
  std::ifstream in(file);
  return parse_stats(std::string((std::istreambuf_iterator<char>(in)), {}));
}

std::map<std::string, std::string> Supervisor::parse_stats(const std::string& text) {
  std::map<std::string, std::string> values;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && (line[0] == ' ' || line[0] == '\t')) {
      continue;  // a section's line (rocm-ernic's per-QP counters): not the instance's own
    }
    const auto colon = line.find(" : ");
    if (colon != std::string::npos) {
      values[line.substr(0, colon)] = line.substr(colon + 3);
    }
  }
  return values;
}

std::string Supervisor::check_mesh() const {
  for (const auto& info : instances_) {
    const auto stats = read_stats(info.stats);
    const auto lost = stats.find("mesh_nodes_lost");
    if (lost != stats.end() && lost->second != "0") {
      return fmt::format("instance {} ({}, pid {}) lost {} mesh peer(s); last log lines:{}",
                         info.id, info.role, info.pid, lost->second, tail(info.log, 10));
    }
  }
  return {};
}

std::string Supervisor::check_alive() {
  const std::lock_guard lock(health_mutex_);
  return reap_exited();
}

std::string Supervisor::reap_exited() {
  for (std::size_t i = 0; i < instances_.size(); ++i) {
    int status = 0;
    if (!reaped_[i] && waitpid(instances_[i].pid, &status, WNOHANG) == instances_[i].pid) {
      return note_exit(i, status);
    }
  }
  return {};
}

std::string Supervisor::note_exit(std::size_t index, int status) {
  reaped_[index] = true;
  std::string exit = describe_exit(instances_[index], status);
  if (first_exit_.empty()) {
    first_exit_ = exit;
  }
  return exit;
}

std::string Supervisor::check_health(std::chrono::milliseconds dying) {
  // The run's watchdog thread and its main thread both ask; whichever reaps an instance, both
  // must name it (the other once named the survivor's lost peer instead: a CI run, 2026-12-04).
  const std::lock_guard lock(health_mutex_);
  if (!first_exit_.empty()) {
    return first_exit_;
  }
  if (std::string dead = reap_exited(); !dead.empty()) {
    return dead;
  }
  std::string lost = check_mesh();
  if (lost.empty()) {
    return {};
  }
  // Each live instance's exit, observed through a pidfd (no polling loop). A pidfd that turns
  // readable is an instance that exited, and a blocking waitpid collects its status at once.
  std::vector<pollfd> exits;
  std::vector<std::size_t> watched;
  for (std::size_t i = 0; i < instances_.size(); ++i) {
    const int fd =
        reaped_[i] ? -1 : static_cast<int>(syscall(SYS_pidfd_open, instances_[i].pid, 0));
    if (fd >= 0) {
      exits.push_back({fd, POLLIN, 0});
      watched.push_back(i);
    }
  }
  const auto deadline = std::chrono::steady_clock::now() + dying;
  int ready = 0;
  while (!exits.empty()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    ready = poll(exits.data(), exits.size(), static_cast<int>(std::max<long>(left.count(), 0)));
    if (ready >= 0 || errno != EINTR) {
      break;
    }
  }
  std::string dead;
  for (std::size_t k = 0; ready > 0 && k < exits.size() && dead.empty(); ++k) {
    int status = 0;
    const InstanceInfo& info = instances_[watched[k]];
    if ((exits[k].revents & POLLIN) != 0 && waitpid(info.pid, &status, 0) == info.pid) {
      dead = note_exit(watched[k], status);
    }
  }
  for (const pollfd& p : exits) {
    close(p.fd);
  }
  if (dead.empty()) {
    dead = reap_exited();
  }
  return dead.empty() ? lost : dead;
}

void Supervisor::stop(std::chrono::milliseconds grace) {
  if (detached_) {
    return;
  }
  // Workers before the manager: a worker that loses its manager first leaves the mesh with an
  // error (exit status 1, "lost the manager"), which a normal stop should not log.
  const auto deadline = std::chrono::steady_clock::now() + grace;
  for (std::size_t i = 1; i < instances_.size(); ++i) {
    terminate(i, deadline, false);
  }
  for (std::size_t i = instances_.size(); i-- > 1;) {
    terminate(i, deadline, true);
  }
  if (!instances_.empty()) {
    terminate(0, deadline, false);
    terminate(0, deadline, true);
  }
}

void Supervisor::terminate(std::size_t index, std::chrono::steady_clock::time_point deadline,
                           bool wait) {
  if (reaped_[index]) {
    return;
  }
  const pid_t pid = instances_[index].pid;
  if (!wait) {
    kill(-pid, SIGTERM);
    return;
  }
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) != pid) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  reaped_[index] = true;
}

}  // namespace ernic::emu
