#pragma once

#include <CLI/CLI.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "base/command_context.h"
#include "run/run_result.h"
#include "run/up_state.h"

namespace ernic {

struct Platform;

// What `ernicctl up` leaves in its state directory for status, logs, stats, ssh and down, and
// for rocm-ernic's helper, which reads $ERNIC_RUN_DIR/instances.json, $ERNIC_RUN_DIR/<id>.stats
// and $ERNIC_LOG_DIR/<id>.log.
struct StateFlags {
  std::string state_dir = default_state_dir();

  // $ERNIC_RUN_DIR, else /run/ernicctl.
  static std::string default_state_dir();
};

// STATE_DIR/up.json: scenario, run, hosts with their facts, instances.
std::filesystem::path state_file(const StateFlags& flags);
// STATE_DIR/instances.json: rocm-ernic's service-layer manifest.
std::filesystem::path manifest_file(const StateFlags& flags);
// Where each instance's log is linked as <id>.log: `log_dir` when given, else $ERNIC_LOG_DIR,
// else a logs/ folder in the state directory.
std::filesystem::path instance_log_dir(const StateFlags& flags, const std::string& log_dir);

// up.json, or nothing when nothing is up; throws when the file is not JSON or a field of it
// has the wrong type (run/up_state.h).
std::optional<UpState> read_state(const StateFlags& flags);
// The same, saying "nothing is up" on stderr when there is no state.
std::optional<UpState> read_state_or_say(const StateFlags& flags);

// Links STATE_DIR/<id>.stats and LOG_DIR/<id>.log to each instance's live stats file and log
// (the `stats` and `log` of the manifest's instances), replacing stale links; instances on
// other machines (a `remote` entry) get none. up.json records
// the links made, so that `down` removes exactly them; a link that cannot be made is a problem
// to report, not a reason to lose the state of what runs.
struct InstanceLinks {
  std::vector<std::string> links;
  std::vector<std::string> problems;
};
InstanceLinks link_instance_files(const std::vector<ManifestInstance>& instances,
                                  const std::filesystem::path& state_dir,
                                  const std::filesystem::path& log_dir);
// Removes the links up.json lists (`instance_files`), then the log folder when `up` created it
// (`log_dir_created`) and nothing else is in it.
void remove_instance_files(const UpState& state);

// Notes in up.json that a `run --attach` used what is up (`status` shows the last one); does
// nothing when `down` removed the state meanwhile.
void note_attached_run(const StateFlags& flags, const RunResult& result);

// `ernicctl up --restart-instances` (restart_instances.cc); `sets` as `up --set`.
int restart_instances(const StateFlags& flags, const std::vector<std::string>& sets,
                      const Platform& platform);

// `--state-dir` on a bring-up subcommand.
void add_state_option(CLI::App* command, StateFlags& flags);
// Runs a subcommand's body, turning an exception into "error: ..." and exit status 1.
void run_guarded(CommandContext& context, const std::function<int()>& body);

// The bring-up subcommands, each in its own file.
void register_up_command(CLI::App& app, CommandContext& context);
void register_status_command(CLI::App& app, CommandContext& context);
void register_logs_and_stats_commands(CLI::App& app, CommandContext& context);
void register_ssh_command(CLI::App& app, CommandContext& context);
void register_down_command(CLI::App& app, CommandContext& context);

}  // namespace ernic
