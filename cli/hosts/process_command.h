#pragma once

#include <memory>

#include "base/subprocess.h"
#include "hosts/host.h"

namespace ernic {

// A RunningCommand that is a child process of ernicctl: what local and netns hosts run.
class ProcessCommand final : public RunningCommand {
 public:
  // Throws SpawnError when the program cannot be started.
  // Plumbing that must finish during teardown is not `interruptible` by Ctrl-C.
  ProcessCommand(const CommandSpec& spec, OutputSink* sink, const std::string& netns_path,
                 bool interruptible = true);
  ~ProcessCommand() override;

  bool wait_for_output(const std::regex& pattern, Clock::time_point deadline) override;
  bool running() override;
  CommandResult wait(Clock::time_point deadline) override;
  CommandResult stop(std::chrono::milliseconds grace) override;

 private:
  CommandResult collect();

  std::unique_ptr<Subprocess> process_;
  Clock::time_point started_;
  Clock::time_point own_deadline_;
  bool timed_out_ = false;
  bool interrupted_ = false;
  bool interruptible_ = true;
};

// Runs `argv` on this machine, for provider plumbing (ip, mount): throws std::runtime_error
// with the command and its stderr when it fails.
std::string run_or_throw(const std::vector<std::string>& argv,
                         std::chrono::milliseconds timeout = std::chrono::milliseconds(30000));

}  // namespace ernic
