// A stand-in for the rocm-ernic server (which needs QEMU 10.1 to be useful): the same flags, the
// same ERNIC_TCP_GUEST_GIDS requirement, a real listening UNIX socket, a "device realized" log
// line, a stats file rewritten while it runs. Test-only flags make it misbehave on purpose:
//   --fake-ready-delay-ms N   log the ready line N ms after start (default 100)
//   --fake-never-ready        create the socket but never log the ready line
//   --fake-ignore-sigterm     ignore SIGTERM (mesh nodes sometimes do)
//   --fake-exit-after-ms N    exit with status 3 and an error line N ms after becoming ready
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

namespace {

volatile sig_atomic_t stop_requested = 0;

void on_sigterm(int) {
  stop_requested = 1;
}

struct Options {
  std::string backend, socket, mac, tap, stats_file, log_file, log_level = "info";
  int ready_delay_ms = 100;
  bool never_ready = false;
  bool ignore_sigterm = false;
  int exit_after_ms = -1;
};

FILE* log_sink = stderr;

void log_line(const char* level, const std::string& text) {
  std::fprintf(log_sink, "[rocm-ernic] %s: %s\n", level, text.c_str());
  std::fflush(log_sink);
}

int usage(const std::string& problem) {
  std::fprintf(stderr, "fake_rocm_ernic: %s\n", problem.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--version") {
      std::printf("rocm-ernic 0.0-fake\n");
      return 0;
    }
    if (flag == "--fake-never-ready") {
      options.never_ready = true;
      continue;
    }
    if (flag == "--fake-ignore-sigterm") {
      options.ignore_sigterm = true;
      continue;
    }
    if (i + 1 >= argc) {
      return usage("missing value after " + flag);
    }
    std::string value = argv[++i];
    if (flag == "--backend") {
      options.backend = value;
    } else if (flag == "--socket") {
      options.socket = value;
    } else if (flag == "--mac") {
      options.mac = value;
    } else if (flag == "--tap") {
      options.tap = value;
    } else if (flag == "--stats-file") {
      options.stats_file = value;
    } else if (flag == "--log-file") {
      options.log_file = value;
    } else if (flag == "--log-level") {
      options.log_level = value;
    } else if (flag == "--fake-ready-delay-ms") {
      options.ready_delay_ms = std::atoi(value.c_str());
    } else if (flag == "--fake-exit-after-ms") {
      options.exit_after_ms = std::atoi(value.c_str());
    } else {
      return usage("unknown flag " + flag);
    }
  }
  if (options.socket.empty() || options.mac.empty()) {
    return usage("--socket and --mac are required");
  }
  if (options.backend.rfind("tcp:manager:listen:", 0) != 0 &&
      options.backend.rfind("tcp:worker:", 0) != 0) {
    return usage("unexpected backend '" + options.backend + "'");
  }
  const char* gids = std::getenv("ERNIC_TCP_GUEST_GIDS");
  if (gids == nullptr || *gids == '\0') {
    return usage("ERNIC_TCP_GUEST_GIDS is not set; QP setup to the guest would fail");
  }
  if (!options.log_file.empty()) {
    log_sink = std::fopen(options.log_file.c_str(), "a");
    if (log_sink == nullptr) {
      return usage("cannot open log file " + options.log_file);
    }
  }
  struct sigaction action {};
  action.sa_handler = options.ignore_sigterm ? SIG_IGN : on_sigterm;
  sigaction(SIGTERM, &action, nullptr);

  int listener = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (options.socket.size() >= sizeof(address.sun_path)) {
    return usage("socket path too long");
  }
  std::strncpy(address.sun_path, options.socket.c_str(), sizeof(address.sun_path) - 1);
  unlink(options.socket.c_str());
  if (bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      listen(listener, 4) != 0) {
    return usage("cannot listen on " + options.socket + ": " + std::strerror(errno));
  }
  log_line("info", "backend " + options.backend + ", mac " + options.mac + ", guest gids " + gids);

  auto start = std::chrono::steady_clock::now();
  bool ready = false;
  long ticks = 0;
  while (stop_requested == 0) {
    auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::steady_clock::now() - start)
                       .count();
    if (!ready && !options.never_ready && elapsed >= options.ready_delay_ms) {
      log_line("info", "ionic device realized, vfio-user socket " + options.socket);
      ready = true;
    }
    if (ready && options.exit_after_ms >= 0 &&
        elapsed >= options.ready_delay_ms + options.exit_after_ms) {
      log_line("error", "mesh peer lost: connection reset");
      unlink(options.socket.c_str());
      return 3;
    }
    if (!options.stats_file.empty() && ticks % 20 == 0) {
      std::ofstream(options.stats_file)
          << "uptime_ms : " << elapsed << "\nrx_packets : 0\ntx_packets : 0\n";
    }
    ++ticks;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  log_line("info", "SIGTERM: shutting down");
  close(listener);
  unlink(options.socket.c_str());
  return 0;
}
