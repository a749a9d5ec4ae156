#include "hosts/libvirt/libvirt_connection.h"

#include <fmt/format.h>
#include <libvirt/virterror.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "base/local_process.h"

namespace ernic {
namespace {

void ignore_libvirt_error(void* /*user_data*/, virErrorPtr /*error*/) {}

void silence_libvirt() {
  static std::once_flag once;
  std::call_once(once, [] {
    virInitialize();
    virSetErrorFunc(nullptr, ignore_libvirt_error);
  });
}

bool process_alive(int pid) {
  return pid > 0 && ::kill(pid, 0) == 0;
}

}  // namespace

std::string libvirt_error_message() {
  const char* message = virGetLastErrorMessage();
  if (message == nullptr || std::string(message) == "no error") {
    return "unknown libvirt error";
  }
  return message;
}

LibvirtConnection::LibvirtConnection(const std::string& uri) : uri_(uri) {
  silence_libvirt();
  connection_ = virConnectOpen(uri.c_str());
  if (connection_ == nullptr) {
    throw std::runtime_error(
        fmt::format("cannot connect to libvirt at {}: {}", uri, libvirt_error_message()));
  }
}

LibvirtConnection::~LibvirtConnection() {
  if (connection_ != nullptr) {
    virConnectClose(connection_);
  }
}

bool is_local_system_uri(const std::string& uri) {
  return uri == "qemu:///system" || uri.empty();
}

int running_daemon_pid(const std::string& name) {
  std::ifstream pid_file("/run/" + name + ".pid");
  int pid = 0;
  if (!(pid_file >> pid) || !process_alive(pid)) {
    return 0;
  }
  std::ifstream comm(fmt::format("/proc/{}/comm", pid));
  std::string command;
  comm >> command;
  return command == name ? pid : 0;
}

void LibvirtDaemons::ensure_running(std::chrono::seconds timeout) {
  silence_libvirt();
  for (const char* daemon : {"virtlogd", "libvirtd"}) {
    if (running_daemon_pid(daemon) != 0) {
      continue;
    }
    if (!local_program_exists(daemon)) {
      throw std::runtime_error(
          fmt::format("{} is not installed (fix: apt-get install libvirt-daemon-system)", daemon));
    }
    if (::geteuid() != 0) {
      throw std::runtime_error(
          fmt::format("{} is not running and only root can start it (fix: sudo {} -d, or start the "
                      "libvirtd service)",
                      daemon, daemon));
    }
    LocalProcessOptions options;
    options.timeout = std::chrono::seconds(30);
    auto result = run_local({daemon, "-d"}, options);
    if (!result.ok()) {
      throw std::runtime_error(
          fmt::format("cannot start {}: {}\n{}", daemon, result.describe(), result.tail()));
    }
    int pid = 0;
    for (int attempt = 0; attempt < 100 && pid == 0; ++attempt) {
      pid = running_daemon_pid(daemon);
      if (pid == 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
    if (pid == 0) {
      throw std::runtime_error(
          fmt::format("{} -d exited but no {} is running (see its log in "
                      "/var/log/libvirt)",
                      daemon, daemon));
    }
    started_names_.push_back(daemon);
    started_pids_.push_back(pid);
  }
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string last_error;
  while (std::chrono::steady_clock::now() < deadline) {
    virConnectPtr connection = virConnectOpen("qemu:///system");
    if (connection != nullptr) {
      virConnectClose(connection);
      return;
    }
    last_error = libvirt_error_message();
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  throw std::runtime_error(
      fmt::format("libvirtd runs but qemu:///system does not answer within "
                  "{} s: {}",
                  timeout.count(), last_error));
}

void LibvirtDaemons::stop_started() {
  while (!started_pids_.empty()) {
    int pid = started_pids_.back();
    started_pids_.pop_back();
    started_names_.pop_back();
    if (!process_alive(pid)) {
      continue;
    }
    ::kill(pid, SIGTERM);
    for (int attempt = 0; attempt < 100 && process_alive(pid); ++attempt) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (process_alive(pid)) {
      ::kill(pid, SIGKILL);
    }
  }
}

}  // namespace ernic
