#include "base/local_process.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>

#include "base/subprocess.h"

namespace ernic {

std::string LocalProcessResult::describe() const {
  if (interrupted) {
    return "interrupted";
  }
  if (timed_out) {
    return "timed out";
  }
  if (term_signal != 0) {
    return fmt::format("killed by signal {} ({})", term_signal, strsignal(term_signal));
  }
  return fmt::format("exit status {}", exit_code);
}

std::string LocalProcessResult::tail(std::size_t lines) const {
  std::size_t end = output.size();
  while (end > 0 && output[end - 1] == '\n') {
    --end;
  }
  std::size_t start = end;
  for (std::size_t seen = 0; start > 0; --start) {
    if (output[start - 1] == '\n' && ++seen == lines) {
      break;
    }
  }
  return output.substr(start, end - start);
}

LocalProcessResult run_local(const std::vector<std::string>& argv,
                             const LocalProcessOptions& options) {
  if (argv.empty()) {
    throw std::invalid_argument("run_local: empty command");
  }
  std::ofstream log;
  if (!options.log_file.empty()) {
    log.open(options.log_file, std::ios::app);
    log << "$ ";
    for (const auto& arg : argv) {
      log << arg << ' ';
    }
    log << '\n';
  }
  LocalProcessResult result;
  // Both streams in the order they arrive, as a user at a terminal would have seen them; the
  // callback runs on the subprocess's reader thread.
  std::mutex output_mutex;
  auto collect = [&](bool /*is_stderr*/, std::string_view data) {
    std::lock_guard lock(output_mutex);
    result.output.append(data);
    if (log.is_open()) {
      log.write(data.data(), static_cast<std::streamsize>(data.size()));
      log.flush();
    }
  };
  std::unique_ptr<Subprocess> process;
  try {
    process = Subprocess::spawn({.argv = argv, .env = options.env}, collect);
  } catch (const SpawnError& e) {
    result.exit_code = 127;
    result.output = std::string(e.what()) + "\n";
    if (log.is_open()) {
      log << result.output << "# " << result.describe() << "\n";
    }
    return result;
  }
  using ProcessClock = std::chrono::steady_clock;
  auto deadline = options.timeout.count() > 0 ? ProcessClock::now() + options.timeout
                                              : ProcessClock::time_point::max();
  while (true) {
    // Slices, so that the caller's stop flag is seen within a fifth of a second.
    auto slice = std::min(deadline, ProcessClock::now() + std::chrono::milliseconds(200));
    auto end = process->wait_until(slice);
    if (end == Subprocess::WaitEnd::kExited) {
      break;
    }
    if (end == Subprocess::WaitEnd::kInterrupted ||
        (options.stop != nullptr && options.stop->load())) {
      result.interrupted = true;
      break;
    }
    if (ProcessClock::now() >= deadline) {
      result.timed_out = true;
      break;
    }
  }
  if (result.interrupted || result.timed_out) {
    process->terminate(std::chrono::seconds(5));
  }
  process->finish_output(std::chrono::seconds(5));
  result.exit_code = process->exit_code();
  result.term_signal = process->term_signal();
  // Whatever the program left running in its group goes with it.
  process.reset();
  std::lock_guard lock(output_mutex);
  if (log.is_open()) {
    log << "# " << result.describe() << "\n";
  }
  return result;
}

bool local_program_exists(const std::string& program) {
  if (program.find('/') != std::string::npos) {
    return ::access(program.c_str(), X_OK) == 0;
  }
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    std::string candidate = (dir.empty() ? "." : dir) + "/" + program;
    struct stat info {};
    if (::stat(candidate.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0) {
      return true;
    }
  }
  return false;
}

}  // namespace ernic
