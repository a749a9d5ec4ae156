#include "hosts/ssh/ssh_host.h"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>

#include "base/interrupt.h"
#include "base/units.h"
#include "hosts/local_host.h"
#include "hosts/ssh/ssh_control.h"

namespace ernic {
namespace {

// Grace between SIGTERM and SIGKILL when a command times out.
constexpr std::chrono::milliseconds kTimeoutGrace{1000};
// How long a killed command gets to close its channel before we stop waiting for it.
constexpr std::chrono::milliseconds kAfterKill{3000};
// How often a waiting command looks at Ctrl-C.
constexpr std::chrono::milliseconds kInterruptPoll{100};

std::string to_text(std::chrono::nanoseconds duration) {
  return format_duration(duration);
}

class SshRunningCommand : public RunningCommand {
 public:
  SshRunningCommand(std::shared_ptr<SshConnection> connection, std::shared_ptr<SshControl> control,
                    const CommandSpec& spec, OutputSink* sink)
      : connection_(std::move(connection)),
        control_(std::move(control)),
        spec_(spec),
        started_(Clock::now()) {
    channel_ = connection_->exec(wrap_command(spec_), sink, /*announces_pid=*/true);
  }

  ~SshRunningCommand() override {
    if (!result_) {
      try {
        stop(kTimeoutGrace);
      } catch (const std::exception&) {
        // The connection is gone: nothing is left to stop on our side.
      }
    }
  }

  bool wait_for_output(const std::regex& pattern, Clock::time_point deadline) override {
    Clock::time_point limit = std::min(deadline, own_deadline());
    for (;;) {
      Clock::time_point slice = std::min(limit, Clock::now() + kInterruptPoll);
      if (channel_->wait_for_line(pattern, slice)) {
        return true;
      }
      if (Interrupt::requested() || channel_->closed() || Clock::now() >= limit) {
        return false;
      }
    }
  }

  bool running() override { return !channel_->closed(); }

  CommandResult wait(Clock::time_point deadline) override {
    if (result_) {
      return *result_;
    }
    Clock::time_point limit = std::min(deadline, own_deadline());
    for (;;) {
      if (channel_->wait_closed(std::min(limit, Clock::now() + kInterruptPoll))) {
        return finish(false);
      }
      if (Interrupt::requested()) {
        interrupted_ = true;
        // After a second Ctrl-C, no grace.
        terminate(Interrupt::count() > 1 ? std::chrono::milliseconds(0) : kTimeoutGrace);
        return finish(false);
      }
      if (Clock::now() >= limit) {
        terminate(kTimeoutGrace);
        return finish(true);
      }
    }
  }

  CommandResult stop(std::chrono::milliseconds grace) override {
    if (result_) {
      return *result_;
    }
    if (!channel_->closed()) {
      terminate(grace);
    }
    return finish(false);
  }

 private:
  Clock::time_point own_deadline() const {
    return spec_.timeout.count() > 0 ? started_ + spec_.timeout : Clock::time_point::max();
  }

  // SIGTERM to the remote process group, then SIGKILL after `grace`.
  void terminate(std::chrono::milliseconds grace) {
    // start() does not wait for the wrapper's pid line; a command stopped right after it
    // started waits for it here.
    if (channel_->wait_remote_pid(Clock::now() + connection_->options().alive_timeout) <= 0) {
      // The wrapper never reported its pid: the command never started, or the host stopped
      // answering before it did. Nothing to signal; the channel is dropped.
      return;
    }
    signal("TERM");
    if (channel_->wait_closed(Clock::now() + grace)) {
      return;
    }
    signal("KILL");
    channel_->wait_closed(Clock::now() + kAfterKill);
  }

  void signal(const char* name) {
    long pid = channel_->remote_pid();
    if (pid <= 0 || !connection_->lost_reason().empty()) {
      return;
    }
    try {
      control_->signal_group(pid, name);
    } catch (const SshError&) {
      // A lost connection ends the command's channel too; wait() reports it.
    }
  }

  CommandResult finish(bool timed_out) {
    SshExecChannel::Outcome outcome = channel_->outcome();
    CommandResult result;
    result.out = std::move(outcome.out);
    result.err = std::move(outcome.err);
    result.timed_out = timed_out;
    result.interrupted = interrupted_;
    result.term_signal = outcome.exit_signal;
    result.exit_code = outcome.exit_status.value_or(-1);
    if (!outcome.lost.empty()) {
      if (!result.err.empty() && result.err.back() != '\n') {
        result.err += '\n';
      }
      result.err += outcome.lost + "\n";
    } else if (!timed_out && !channel_->closed()) {
      // stop() gave up waiting: the remote side never closed the channel.
      result.err += fmt::format("{}: the command did not end after SIGKILL\n", connection_->who());
    }
    result.duration = Clock::now() - started_;
    result_ = result;
    return result;
  }

  std::shared_ptr<SshConnection> connection_;
  std::shared_ptr<SshControl> control_;
  CommandSpec spec_;
  Clock::time_point started_;
  std::shared_ptr<SshExecChannel> channel_;
  std::optional<CommandResult> result_;
  bool interrupted_ = false;
};

}  // namespace

SshHost::SshHost(std::string name, std::string address, SshConnectOptions options)
    : name_(std::move(name)), address_(std::move(address)), options_(std::move(options)) {
  if (options_.label.empty()) {
    options_.label = name_;
  }
  connection_ = SshConnection::open(options_);
  control_ = std::make_shared<SshControl>(connection_);
}

SshHost::~SshHost() = default;

std::string SshHost::describe() const {
  std::string via = options_.jump ? " via " + options_.jump->display() : "";
  return fmt::format("{} (ssh {}{}, {})", name_, options_.target.display(), via, address_);
}

std::unique_ptr<RunningCommand> SshHost::start(const CommandSpec& spec, OutputSink* sink) {
  return std::make_unique<SshRunningCommand>(connection_, control_, spec, sink);
}

void SshHost::upload(std::string_view content, const std::string& path, int mode) {
  // Written beside the target and renamed, so readers never see half a file.
  std::string command = fmt::format(
      "exec /bin/sh -c 'umask 077; t=\"$1.ernic-upload.$$\"; "
      "if cat > \"$t\" && chmod \"$2\" \"$t\" && mv -f \"$t\" \"$1\"; then exit 0; fi; "
      "rm -f \"$t\"; exit 1' ernic {} {:o}",
      shell_quote(path), mode);
  auto channel = connection_->exec(command, nullptr, false);
  channel->write(content, true);
  auto limit =
      std::max<std::chrono::milliseconds>(options_.connect_timeout, std::chrono::seconds(60));
  bool closed = channel->wait_closed(Clock::now() + limit);
  SshExecChannel::Outcome outcome = channel->outcome();
  if (!closed) {
    throw SshError(fmt::format("{}: upload of {} bytes to {} did not finish within {}",
                               connection_->who(), content.size(), path,
                               to_text(std::chrono::nanoseconds(limit))));
  }
  if (!outcome.lost.empty()) {
    throw SshError(outcome.lost);
  }
  if (outcome.exit_status.value_or(-1) != 0) {
    std::string error = outcome.err;
    while (!error.empty() && error.back() == '\n') {
      error.pop_back();
    }
    throw SshError(fmt::format(
        "{}: upload to {} failed: {}", connection_->who(), path,
        error.empty() ? "exit status " + std::to_string(outcome.exit_status.value_or(-1)) : error));
  }
}

bool SshHost::is_listening(std::uint16_t port) {
  return proc_net_tcp_listens(control_->tcp_tables(), port);
}

std::string SshHost::check_alive() {
  if (std::string lost = connection_->lost_reason(); !lost.empty()) {
    return lost;
  }
  try {
    connection_->ping(options_.alive_timeout);
  } catch (const SshError& error) {
    if (std::string lost = connection_->lost_reason(); !lost.empty()) {
      return lost;
    }
    return error.what();
  }
  return connection_->lost_reason();
}

bool SshHost::has_program(const std::string& program) {
  return control_->has_program(program);
}

std::unique_ptr<SshHost> SshHost::open_new_session() const {
  return std::make_unique<SshHost>(name_, address_, options_);
}

}  // namespace ernic
