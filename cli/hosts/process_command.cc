#include "hosts/process_command.h"

#include <fmt/format.h>
#include <signal.h>

#include "base/interrupt.h"

namespace ernic {
namespace {

// How long a stopped command gets to exit on SIGTERM; after a second Ctrl-C, none.
std::chrono::milliseconds stop_grace() {
  return Interrupt::count() > 1 ? std::chrono::milliseconds(0) : std::chrono::milliseconds(1000);
}

}  // namespace

ProcessCommand::ProcessCommand(const CommandSpec& spec, OutputSink* sink,
                               const std::string& netns_path, bool interruptible)
    : started_(Clock::now()), interruptible_(interruptible) {
  own_deadline_ = spec.timeout.count() > 0 ? started_ + spec.timeout : Clock::time_point::max();
  SpawnOptions options{
      .argv = spec.argv, .env = spec.env, .netns_path = netns_path, .stdin_file = ""};
  Subprocess::OutputCallback callback;
  if (sink != nullptr) {
    callback = [sink](bool is_stderr, std::string_view data) {
      sink->on_output(is_stderr ? OutputStream::kStderr : OutputStream::kStdout, data);
    };
  }
  process_ = Subprocess::spawn(options, std::move(callback));
}

ProcessCommand::~ProcessCommand() {
  if (process_->running()) {
    process_->terminate(std::chrono::milliseconds(0));
  }
}

bool ProcessCommand::wait_for_output(const std::regex& pattern, Clock::time_point deadline) {
  return process_->wait_for_line(pattern, std::min(deadline, own_deadline_));
}

bool ProcessCommand::running() {
  return process_->running();
}

CommandResult ProcessCommand::wait(Clock::time_point deadline) {
  switch (process_->wait_until(std::min(deadline, own_deadline_), interruptible_)) {
    case Subprocess::WaitEnd::kExited:
      break;
    case Subprocess::WaitEnd::kDeadline:
      timed_out_ = true;
      process_->terminate(std::chrono::milliseconds(500));
      break;
    case Subprocess::WaitEnd::kInterrupted:
      interrupted_ = true;
      process_->terminate(stop_grace());
      break;
  }
  return collect();
}

CommandResult ProcessCommand::stop(std::chrono::milliseconds grace) {
  process_->terminate(grace);
  return collect();
}

CommandResult ProcessCommand::collect() {
  process_->finish_output();
  CommandResult result;
  result.exit_code = process_->exit_code();
  result.term_signal = process_->term_signal();
  result.timed_out = timed_out_;
  result.interrupted = interrupted_;
  result.out = process_->stdout_text();
  result.err = process_->stderr_text();
  result.duration = Clock::now() - started_;
  return result;
}

std::string run_or_throw(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  CommandSpec spec{.argv = argv, .timeout = timeout, .env = {}};
  ProcessCommand command(spec, nullptr, "", /*interruptible=*/false);
  // Plumbing must finish even while Ctrl-C tears the run down, so it is not interruptible.
  CommandResult result = command.wait(Clock::now() + timeout);
  if (!result.ok() && !result.interrupted) {
    std::string err = result.err;
    while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) {
      err.pop_back();
    }
    throw std::runtime_error(fmt::format("`{}` failed ({}){}{}", spec.display(), result.describe(),
                                         err.empty() ? "" : ": ", err));
  }
  return result.out;
}

}  // namespace ernic
