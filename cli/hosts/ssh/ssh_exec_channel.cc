#include "hosts/ssh/ssh_connection.h"

#include <csignal>
#include <cstdlib>

namespace ernic {
namespace {

int signal_number(const std::string& name) {
  static const std::pair<const char*, int> kSignals[] = {
      {"HUP", SIGHUP},   {"INT", SIGINT},   {"QUIT", SIGQUIT}, {"ILL", SIGILL},
      {"ABRT", SIGABRT}, {"FPE", SIGFPE},   {"KILL", SIGKILL}, {"SEGV", SIGSEGV},
      {"PIPE", SIGPIPE}, {"ALRM", SIGALRM}, {"TERM", SIGTERM}, {"USR1", SIGUSR1},
      {"USR2", SIGUSR2}, {"BUS", SIGBUS},   {"TRAP", SIGTRAP}, {"XCPU", SIGXCPU},
  };
  for (const auto& [signal_name, number] : kSignals) {
    if (name == signal_name) {
      return number;
    }
  }
  return SIGTERM;  // an exit-signal we cannot name is still a signal
}

}  // namespace

// Channel callbacks: libssh calls these while processing packets, with the connection locked.
struct SshChannelCallbacks {
  static int data(ssh_session, ssh_channel, void* data, uint32_t length, int is_stderr,
                  void* user) {
    static_cast<SshExecChannel*>(user)->on_data(
        std::string_view(static_cast<const char*>(data), length), is_stderr != 0);
    return static_cast<int>(length);
  }
  static void close(ssh_session, ssh_channel, void* user) {
    static_cast<SshExecChannel*>(user)->on_close();
  }
  static void exit_status(ssh_session, ssh_channel, int status, void* user) {
    static_cast<SshExecChannel*>(user)->on_exit_status(status);
  }
  static void exit_signal(ssh_session, ssh_channel, const char* signal, int, const char*,
                          const char*, void* user) {
    static_cast<SshExecChannel*>(user)->on_exit_signal(signal);
  }
};

void SshExecChannel::attach_callbacks(ssh_channel raw) {
  ssh_callbacks_init(&callbacks_);
  callbacks_.userdata = this;
  callbacks_.channel_data_function = SshChannelCallbacks::data;
  callbacks_.channel_close_function = SshChannelCallbacks::close;
  callbacks_.channel_exit_status_function = SshChannelCallbacks::exit_status;
  callbacks_.channel_exit_signal_function = SshChannelCallbacks::exit_signal;
  ssh_set_channel_callbacks(raw, &callbacks_);
}

SshExecChannel::SshExecChannel(std::shared_ptr<SshConnection> connection, OutputSink* sink,
                               bool announces_pid)
    : connection_(std::move(connection)), sink_(sink), announces_pid_(announces_pid) {}

SshExecChannel::~SshExecChannel() {
  connection_->release(*this);
}

void SshExecChannel::on_data(std::string_view data, bool is_stderr) {
  if (is_stderr && announces_pid_ && !pid_line_done_) {
    std::size_t end = data.find('\n');
    pid_line_.append(data.substr(0, end));
    if (end == std::string_view::npos) {
      return;
    }
    data.remove_prefix(end + 1);
    pid_line_done_ = true;
    constexpr std::string_view kPrefix = "ernic-pid:";
    std::string passed_on;
    if (pid_line_.rfind(kPrefix, 0) == 0) {
      std::lock_guard lock(mutex_);
      pid_ = std::strtol(pid_line_.c_str() + kPrefix.size(), nullptr, 10);
    } else {
      passed_on = pid_line_ + "\n";  // not our wrapper's line: the command's own output
    }
    passed_on.append(data);
    changed_.notify_all();
    if (passed_on.empty()) {
      return;
    }
    on_data(passed_on, true);
    return;
  }
  // The sink hears first: whoever wakes up on the line below finds it in the step log already.
  if (sink_ != nullptr && !data.empty()) {
    sink_->on_output(is_stderr ? OutputStream::kStderr : OutputStream::kStdout, data);
  }
  {
    std::lock_guard lock(mutex_);
    (is_stderr ? outcome_.err : outcome_.out).append(data);
  }
  changed_.notify_all();
}

void SshExecChannel::on_exit_status(int status) {
  std::lock_guard lock(mutex_);
  outcome_.exit_status = status;
}

void SshExecChannel::on_exit_signal(const char* name) {
  std::lock_guard lock(mutex_);
  outcome_.signal_name = name != nullptr ? name : "";
  outcome_.exit_signal = signal_number(outcome_.signal_name);
}

void SshExecChannel::on_close() {
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
  }
  changed_.notify_all();
}

void SshExecChannel::on_lost(const std::string& reason) {
  {
    std::lock_guard lock(mutex_);
    if (!closed_) {
      outcome_.lost = reason;
      closed_ = true;
    }
  }
  changed_.notify_all();
}

bool SshExecChannel::wait_closed(Clock::time_point deadline) {
  std::unique_lock lock(mutex_);
  return changed_.wait_until(lock, deadline, [this] { return closed_; });
}

bool SshExecChannel::closed() {
  std::lock_guard lock(mutex_);
  return closed_;
}

long SshExecChannel::remote_pid() {
  std::lock_guard lock(mutex_);
  return pid_;
}

long SshExecChannel::wait_remote_pid(Clock::time_point deadline) {
  std::unique_lock lock(mutex_);
  changed_.wait_until(lock, deadline, [this] { return pid_ > 0 || closed_; });
  return pid_;
}

std::optional<std::string> SshExecChannel::next_line(Clock::time_point deadline) {
  std::unique_lock lock(mutex_);
  std::size_t end = std::string::npos;
  changed_.wait_until(lock, deadline, [&] {
    end = outcome_.out.find('\n');
    return end != std::string::npos || closed_;
  });
  if (end == std::string::npos) {
    return std::nullopt;
  }
  std::string line = outcome_.out.substr(0, end);
  outcome_.out.erase(0, end + 1);
  return line;
}

bool SshExecChannel::wait_for_line(const std::regex& pattern, Clock::time_point deadline) {
  std::size_t scanned[2] = {0, 0};
  std::unique_lock lock(mutex_);
  for (;;) {
    const std::string* streams[2] = {&outcome_.out, &outcome_.err};
    for (int i = 0; i < 2; ++i) {
      const std::string& text = *streams[i];
      for (;;) {
        std::size_t end = text.find('\n', scanned[i]);
        bool last_partial = end == std::string::npos && closed_ && scanned[i] < text.size();
        if (end == std::string::npos && !last_partial) {
          break;
        }
        std::size_t stop = end == std::string::npos ? text.size() : end;
        std::string line = text.substr(scanned[i], stop - scanned[i]);
        scanned[i] = end == std::string::npos ? text.size() : end + 1;
        if (std::regex_search(line, pattern)) {
          return true;
        }
      }
    }
    if (closed_) {
      return false;
    }
    if (changed_.wait_until(lock, deadline) == std::cv_status::timeout &&
        Clock::now() >= deadline) {
      return false;
    }
  }
}

void SshExecChannel::write(std::string_view data, bool last) {
  connection_->write(*this, data, last);
}

SshExecChannel::Outcome SshExecChannel::outcome() {
  std::lock_guard lock(mutex_);
  return outcome_;
}

}  // namespace ernic
