// What every emulator kind that places instances on other machines (`instances: [{on: HOST}]`)
// shares: the list form's entries, the run's directory on each machine (created 0700, its kept
// files copied into the run directory and the directory removed on teardown), helper commands
// that finish during teardown, and the instance's output kept as it arrives.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "emulators/emulator_kind.h"
#include "emulators/instance_manifest.h"
#include "hosts/ssh/ssh_connection.h"

namespace ernic {

// What the `on:` of an instance says for this machine (also the default).
inline constexpr const char* kThisMachine = "local";

// Why `ernicctl up` refuses the external kind's list form.
inline constexpr const char* kPlacedUpRefusal =
    "external servers on other machines cannot be left running by `ernicctl up` yet "
    "(`emulator.instances` is a list with `on:`): use `ernicctl run`, which starts and stops them "
    "on their machines, or give `up` a count (`--set emulator.instances=N`) to run them all on "
    "this machine";

struct Placement {
  int id = 0;           // 1 = the manager
  std::string on;       // a host of the scenario, or kThisMachine
  std::string bind;     // mesh address the others reach it at; "" = its host's address
  std::string program;  // the kind's program on that host (its `program_key`); "" = the default
  bool local() const { return on == kThisMachine; }
};

// The schema of one entry of the list: on, bind, and the kind's own key naming its program on
// that machine.
std::shared_ptr<const ObjectSchema> placement_schema(std::string program_key,
                                                     std::string program_description,
                                                     std::string bind_description);
// The entries of the list form, in id order; empty for `instances: N`.
std::vector<Placement> placements_of(const Config& emulator, const std::string& program_key);
// The hosts of the scenario the entries name, each once, in order (not this machine).
std::vector<std::string> placement_hosts_of(const std::vector<Placement>& placements);
// An `on:` that names no host of the scenario: located, with "did you mean".
void check_placements(const Config& emulator, const std::vector<std::string>& host_names,
                      Diagnostics& out);

// The host that runs `placement`: `this_machine` for local ones, else the scenario's (created
// before the instances start; a logic error otherwise).
Host& placement_host(const Placement& placement, const EmulatorContext& context,
                     Host& this_machine);
// The run's directory on `on`: `base` on this machine, one per other host beside it (hosts that
// share this filesystem, such as namespaces, must not share it).
std::string machine_dir(const std::string& base, const std::string& on);

std::string trimmed(std::string text);
// What an instance has moved, from its stats file's counters (0 for a counter it lacks).
InstanceTraffic traffic_of(const std::map<std::string, std::string>& stats);
// A helper command on a host, run to its end even while Ctrl-C tears the run down (a wait()
// would stop it on an interrupt, and teardown needs its copies and removals done). Bounded by
// `timeout`.
CommandResult run_to_end(Host& host, std::vector<std::string> argv,
                         std::chrono::milliseconds timeout = std::chrono::seconds(30));

// Creates `dir` (mode 0700) on `host`, which runs instances placed on `on`, and pushes its
// teardown: the files `kept_files()` names there copied into `kept`, then `dir` removed.
// `kept_files` holds whatever keeps `host` alive until the cleanup ran.
void prepare_machine_dir(Host& host, const std::string& on, const std::string& dir,
                         const std::filesystem::path& kept,
                         std::function<std::vector<std::string>()> kept_files,
                         CleanupStack& cleanup);

// Logs in to the machine again, as `up` did. Throws SshError naming it.
std::unique_ptr<Host> reconnect(const RemoteInstance& remote);

// "up", "no socket" or "gone": the pid runs with the socket on its command line (pids get
// reused), and the socket exists. Throws when the host does not answer.
std::string remote_condition(Host& host, const RemoteInstance& remote);
// Its stats file there; empty when it cannot be read.
std::map<std::string, std::string> remote_stats(Host& host, const std::string& stats);
// SIGTERM to its process group, SIGKILL after `grace`. False when it was gone already. Throws
// when the host does not answer.
bool stop_remote_group(Host& host, pid_t pid, const std::string& socket,
                       std::chrono::milliseconds grace);
// Starts `argv` on `host` in a session of its own (it survives the SSH session and ernicctl),
// stdin from /dev/null, stdout and stderr to `log` there; its pid (= its process group).
pid_t start_detached(Host& host, const std::vector<std::string>& argv, const std::string& log);
// `files` on `host` copied into `kept` (one missing file is named, not fatal for the others),
// then `dir` removed; throws naming what failed.
void collect_and_remove(Host& host, const std::string& on, const std::string& dir,
                        const std::filesystem::path& kept, const std::vector<std::string>& files);

// An instance's output as it arrives (its stdout and stderr over SSH, or a child's), kept in
// the run directory; the first 64 KiB stay in memory (a manager's port, a ready line).
class InstanceLog final : public OutputSink {
 public:
  explicit InstanceLog(const std::filesystem::path& path) : out_(path, std::ios::app) {}
  void on_output(OutputStream stream, std::string_view data) override;
  std::string head();

 private:
  std::mutex mutex_;
  std::ofstream out_;
  std::string head_;
};

}  // namespace ernic
