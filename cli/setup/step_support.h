#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "base/schema.h"
#include "hosts/host.h"
#include "setup/setup_step.h"

// Helpers shared by the setup steps (which read their keys from their Config): running commands
// that must succeed, and notes in the step log.
namespace ernic::setup {

FieldSchema field(std::string name, ValueKind kind, std::string description);

// Where the host's sysfs is mounted: the step's `sysfs_root`, else the host fact
// `sysfs_root`, else /sys. Tests point it at a directory laid out like sysfs.
std::string sysfs_root(const Config& config, const HostFacts& facts);

// Runs a POSIX shell script on the host with positional arguments ($1...), output streamed to
// `log`.
CommandResult run_script(Host& host, const std::string& script,
                         const std::vector<std::string>& args, OutputSink* log,
                         std::chrono::milliseconds timeout = std::chrono::seconds(60));
// Like run_script, but a failure throws SetupError: "<step> on <host>: <what> failed (exit
// status 1): <stderr>".
CommandResult run_script_checked(Host& host, std::string_view step, const std::string& what,
                                 const std::string& script, const std::vector<std::string>& args,
                                 OutputSink* log,
                                 std::chrono::milliseconds timeout = std::chrono::seconds(60));

// A line of ernicctl's own in the step log.
void note(OutputSink* log, const std::string& message);

std::string trim(std::string text);

[[noreturn]] void fail(std::string_view step, const Host& host, const std::string& message);

}  // namespace ernic::setup
