#include "hosts/host.h"

#include <fmt/format.h>

#include <csignal>
#include <cstring>

namespace ernic {
namespace {

bool needs_quoting(const std::string& word) {
  if (word.empty()) {
    return true;
  }
  for (char c : word) {
    bool safe = std::isalnum(static_cast<unsigned char>(c)) || std::strchr("-_./=:,+@%", c);
    if (!safe) {
      return true;
    }
  }
  return false;
}

}  // namespace

std::string shell_quote(const std::string& word) {
  if (!needs_quoting(word)) {
    return word;
  }
  std::string quoted = "'";
  for (char c : word) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

std::string CommandSpec::display() const {
  std::string line;
  for (const auto& [key, value] : env) {
    line += key + "=" + shell_quote(value) + " ";
  }
  for (std::size_t i = 0; i < argv.size(); ++i) {
    if (i > 0) {
      line += ' ';
    }
    line += shell_quote(argv[i]);
  }
  return line;
}

std::string CommandResult::output() const {
  if (err.empty()) {
    return out;
  }
  if (out.empty() || out.back() == '\n') {
    return out + err;
  }
  return out + "\n" + err;
}

std::string CommandResult::describe() const {
  if (interrupted) {
    return "interrupted";
  }
  if (timed_out) {
    return fmt::format("timed out after {:.1f} s", std::chrono::duration<double>(duration).count());
  }
  if (term_signal != 0) {
    return fmt::format("killed by signal {} ({})", term_signal, strsignal(term_signal));
  }
  return fmt::format("exit status {}", exit_code);
}

CommandResult Host::run(const CommandSpec& spec, OutputSink* sink) {
  auto command = start(spec, sink);
  return command->wait(Clock::time_point::max());
}

}  // namespace ernic
