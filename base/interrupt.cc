#include "base/interrupt.h"

#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <mutex>

namespace ernic {
namespace {

std::atomic<int> g_count{0};
std::mutex g_abort_mutex;
std::string g_abort_reason;
std::atomic<int> g_first_signal{0};
int g_wake_fd = -1;

int wake_descriptor() {
  // Created once, before any handler can run, so the handler only writes to it.
  static int fd = [] {
    int created = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    g_wake_fd = created;
    return created;
  }();
  return fd;
}

void note_request(int signal_number) {
  int expected = 0;
  g_first_signal.compare_exchange_strong(expected, signal_number);
  g_count.fetch_add(1);
  std::uint64_t one = 1;
  if (g_wake_fd >= 0) {
    [[maybe_unused]] ssize_t ignored = ::write(g_wake_fd, &one, sizeof one);
  }
}

void on_signal(int signal_number) {
  note_request(signal_number);
}

}  // namespace

void Interrupt::install() {
  wake_descriptor();
  struct sigaction action = {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
  // A closed pipe to a child must surface as EPIPE, not kill the orchestrator mid-teardown.
  ::signal(SIGPIPE, SIG_IGN);
}

int Interrupt::count() {
  return g_count.load();
}

int Interrupt::first_signal() {
  return g_first_signal.load();
}

int Interrupt::wake_fd() {
  return wake_descriptor();
}

void Interrupt::request() {
  wake_descriptor();
  note_request(SIGINT);
}

void Interrupt::abort(const std::string& reason) {
  {
    std::lock_guard lock(g_abort_mutex);
    if (g_abort_reason.empty()) {
      g_abort_reason = reason;
    }
  }
  wake_descriptor();
  note_request(0);
}

std::string Interrupt::abort_reason() {
  std::lock_guard lock(g_abort_mutex);
  return g_abort_reason;
}

void Interrupt::reset() {
  {
    std::lock_guard lock(g_abort_mutex);
    g_abort_reason.clear();
  }
  g_count = 0;
  g_first_signal = 0;
  std::uint64_t value = 0;
  [[maybe_unused]] ssize_t ignored = ::read(wake_descriptor(), &value, sizeof value);
}

}  // namespace ernic
