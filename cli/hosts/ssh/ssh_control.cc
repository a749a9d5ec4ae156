#include "hosts/ssh/ssh_control.h"

#include <fmt/format.h>

#include <cstdlib>

#include "base/units.h"

namespace ernic {
namespace {

// The remote side: one request per line ("tcp", "program NAME", "signal NAME PID"), answered
// by the request's output and a last line "ernic-done STATUS". Runs under /bin/sh whatever the
// login shell is; one line without `!`, so that csh-like login shells pass it on unchanged.
constexpr const char* kControlShell =
    "exec /bin/sh -c 'while read -r op arg; do case $op in "
    "tcp) cat /proc/net/tcp /proc/net/tcp6 2>/dev/null ;; "
    "program) command -v \"$arg\" >/dev/null 2>&1 ;; "
    "signal) set -- $arg; kill -s \"$1\" -- \"-$2\" 2>/dev/null || kill -s \"$1\" \"$2\" "
    "2>/dev/null ;; "
    "*) false ;; esac; printf \"ernic-done %s\\n\" \"$?\"; done' ernic-control";

constexpr std::string_view kDone = "ernic-done ";

}  // namespace

SshControl::SshControl(std::shared_ptr<SshConnection> connection)
    : connection_(std::move(connection)) {}

std::string SshControl::tcp_tables() {
  return ask("tcp", "reading /proc/net/tcp").output;
}

bool SshControl::has_program(const std::string& program) {
  if (program.empty() || program.find('\n') != std::string::npos) {
    throw SshError(
        fmt::format("{}: cannot look up a program named '{}'", connection_->who(), program));
  }
  return ask("program " + program, "looking for " + program).status == 0;
}

void SshControl::signal_group(long pid, const std::string& signal_name) {
  ask(fmt::format("signal {} {}", signal_name, pid), "sending SIG" + signal_name);
}

SshControl::Answer SshControl::ask(const std::string& request, const std::string& what) {
  std::lock_guard lock(mutex_);
  // A shell that ended (killed on the host) is replaced once; a second failure is the answer.
  for (int attempt = 0;; ++attempt) {
    if (std::string lost = connection_->lost_reason(); !lost.empty()) {
      throw SshError(lost);
    }
    if (!channel_ || channel_->closed()) {
      start_locked();
    }
    Answer answer = ask_locked(request);
    if (answer.status >= 0) {
      return answer;
    }
    if (std::string lost = connection_->lost_reason(); !lost.empty()) {
      throw SshError(lost);
    }
    if (!channel_->closed()) {
      // Open but silent for alive_timeout: "not listening" or "not installed" would be a wrong
      // answer from a host that is gone.
      connection_->declare_lost(fmt::format(
          "{}: the host did not answer ({}) within {}", connection_->who(), what,
          format_duration(std::chrono::nanoseconds(connection_->options().alive_timeout))));
      throw SshError(connection_->lost_reason());
    }
    if (attempt > 0) {
      throw SshError(fmt::format("{}: the control shell ended while {}", connection_->who(), what));
    }
  }
}

SshControl::Answer SshControl::ask_locked(const std::string& request) {
  Answer answer;
  try {
    channel_->write(request + "\n", false);
  } catch (const SshError&) {
    if (!channel_->closed()) {
      throw;
    }
    return answer;  // the shell ended: ask() starts another
  }
  auto deadline = Clock::now() + connection_->options().alive_timeout;
  while (std::optional<std::string> line = channel_->next_line(deadline)) {
    std::size_t mark = line->rfind(kDone);
    if (mark == std::string::npos) {
      answer.output += *line + "\n";
      continue;
    }
    // Output without a final newline ends on the marker's line.
    answer.output += line->substr(0, mark);
    answer.status = std::atoi(line->c_str() + mark + kDone.size());
    return answer;
  }
  return answer;  // status -1: no answer before the deadline, or the shell ended
}

void SshControl::start_locked() {
  channel_.reset();
  channel_ = connection_->exec(kControlShell, nullptr, /*announces_pid=*/false);
}

}  // namespace ernic
