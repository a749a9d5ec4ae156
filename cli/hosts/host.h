#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ernic {

using Clock = std::chrono::steady_clock;

// Quotes a word for a POSIX shell only when it needs it.
std::string shell_quote(const std::string& word);

// A command to run on a host. argv[0] is looked up in the host's PATH; nothing goes through a
// shell unless argv says so (["sh", "-c", ...]).
struct CommandSpec {
  std::vector<std::string> argv;
  // Zero means no limit of its own: only an interrupt stops the command.
  std::chrono::milliseconds timeout{0};
  // Added to the host's environment.
  std::vector<std::pair<std::string, std::string>> env;

  // The command line as a user would type it, shell-quoted.
  std::string display() const;
};

struct CommandResult {
  int exit_code = -1;  // meaningful when term_signal == 0
  int term_signal = 0;
  bool timed_out = false;
  bool interrupted = false;  // stopped because the user pressed Ctrl-C
  std::string out;
  std::string err;
  std::chrono::nanoseconds duration{};

  bool ok() const { return !timed_out && !interrupted && term_signal == 0 && exit_code == 0; }
  // "exit status 1", "timed out after 30.0 s", "killed by signal 9 (Killed)", "interrupted".
  std::string describe() const;
  // stdout then stderr, as a terminal would have shown them (tools print errors on stderr in the
  // middle of their tables, and parsers read both).
  std::string output() const;
};

// Runs commands on this machine for a provider that builds hosts by command (netns's `ip`). The
// run's CommandRunner is one, so a dry run lists those commands instead of running them.
class LocalCommandRunner {
 public:
  virtual ~LocalCommandRunner() = default;
  virtual CommandResult run_here(const CommandSpec& spec) = 0;
};

enum class OutputStream { kStdout, kStderr };

// Receives a command's output as it arrives, for example a step log.
class OutputSink {
 public:
  virtual ~OutputSink() = default;
  virtual void on_output(OutputStream stream, std::string_view data) = 0;
};

// A command started on a host. Destroying it stops the command if it still runs, so a
// RunningCommand never outlives the step that started it.
class RunningCommand {
 public:
  virtual ~RunningCommand() = default;
  // Waits until `pattern` matches a line of stdout or stderr. Returns false when the command
  // exits, the deadline passes, or the run is interrupted first.
  virtual bool wait_for_output(const std::regex& pattern, Clock::time_point deadline) = 0;
  virtual bool running() = 0;
  // Waits for the command to exit; past the deadline (or the spec's timeout) it is killed and
  // the result says timed_out.
  virtual CommandResult wait(Clock::time_point deadline) = 0;
  // Asks the command to stop (SIGTERM to its process group), waits up to `grace`, then kills it.
  virtual CommandResult stop(std::chrono::milliseconds grace) = 0;
};

// A machine (or namespace, guest, emulator endpoint) that runs commands. Providers in this
// folder create hosts; the executor and the benchmark modules only ever see this interface.
class Host {
 public:
  virtual ~Host() = default;

  virtual const std::string& name() const = 0;
  // The address benchmarks use to reach this host on the test network.
  virtual std::string address() const = 0;
  // One line for logs and errors, e.g. "server (netns ernic-3f2a-server, 10.77.0.1)".
  virtual std::string describe() const = 0;

  virtual std::unique_ptr<RunningCommand> start(const CommandSpec& spec, OutputSink* sink) = 0;
  // start() and wait() in one.
  CommandResult run(const CommandSpec& spec, OutputSink* sink = nullptr);

  // Writes `content` to `path` on the host with the given mode, replacing it atomically.
  virtual void upload(std::string_view content, const std::string& path, int mode) = 0;
  // Whether a TCP socket listens on `port` in the host's network stack: how servers that
  // serve exactly one client (iperf3 -s -1, perftest) are known to be ready without a probe.
  virtual bool is_listening(std::uint16_t port) = 0;
  // Whether the host's servers listen in this machine's own network stack, where every
  // concurrent run's servers meet (so its ports must be reserved per run).
  virtual bool listens_in_this_machines_stack() const { return false; }
  // Empty while the host is usable; otherwise why it is gone ("namespace ernic-x was removed").
  virtual std::string check_alive() = 0;
  // Whether `program` can be run on the host (found in its PATH).
  virtual bool has_program(const std::string& program) = 0;
  // What the platform knows of the host once it exists (a guest's accelerator, T_init, kernel);
  // setup steps add their own facts. They go into the record beside the measurements.
  virtual std::map<std::string, std::string> platform_facts() const { return {}; }
};

}  // namespace ernic
