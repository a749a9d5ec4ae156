#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace ernic::emu {

struct SupervisorConfig {
  std::string executable;       // path to ernicctl
  int instances = 2;            // one manager, instances - 1 workers
  std::uint16_t base_port = 0;  // manager's mesh port; 0 = pick a free one
  std::string token;
  std::filesystem::path dir;       // sockets, logs, stats go here
  std::string bind = "127.0.0.1";  // where the instances' mesh listens
  // The token goes to the instances in this file (mode 0600), never on a command line other
  // users can read; empty: `dir`/mesh.token, which start() writes.
  std::filesystem::path token_file;
  // Leave out --log-file: the instance logs to stderr, which whoever started it keeps (an
  // instance on another machine, whose output arrives over SSH).
  bool log_to_stderr = false;
  std::chrono::milliseconds ready_timeout{30000};
  std::string log_level = "info";
  std::vector<std::string> extra_args;  // appended to every instance's command line
  // `ernicctl up` leaves the instances running; otherwise they die with the process that
  // started them, even when it is killed outright (PR_SET_PDEATHSIG).
  bool may_outlive_parent = false;
  // Instance i+1 also serves a QEMU guest through the shared-memory file guest_regions[i]
  // (`--guest-region`); missing or empty entries: no guest.
  std::vector<std::filesystem::path> guest_regions;
};

struct InstanceInfo {
  int id = 0;        // 1 = the manager, as in the harness's instances.json
  std::string role;  // "manager" or "worker"
  pid_t pid = 0;
  std::filesystem::path socket;
  std::filesystem::path log;
  std::filesystem::path stats;
  std::vector<std::string> gids;
  std::string mac;
  std::string bind;             // where its mesh listens
  std::uint16_t mesh_port = 0;  // manager only
  // Where the instance describes its device for unmodified verbs programs (their SYSFS_PATH),
  // and the device's name there (`-d` of perftest and ibv_rc_pingpong).
  std::filesystem::path verbs_sysfs;
  std::string verbs_device;
  std::filesystem::path guest_region;  // empty: the instance serves no guest
};

// The shared-memory file through which instance `id` of run `run_token` serves a QEMU guest: in
// /dev/shm, where QEMU's memory backend for a libvirt <shmem> of the same name finds it.
std::filesystem::path guest_region_path(const std::string& run_token, int id);

// Instance `id` of `config` before it starts: its role, socket, log, stats, MAC, GIDs and verbs
// device (ernic_ID, described in its own folder: an instance removes that folder when it exits).
InstanceInfo planned_instance(const SupervisorConfig& config, int id);
// The `ernicctl` arguments instance `info` is started with; a worker dials the manager at
// `manager` ("ADDRESS:PORT", known once the manager listens). Each instance listens on its own
// `info.bind`, which for instances on different machines is not the manager's address.
std::vector<std::string> instance_arguments(const SupervisorConfig& config,
                                            const InstanceInfo& info, const std::string& manager);
// The file instance_arguments() passes as --token-file.
std::filesystem::path token_file_of(const SupervisorConfig& config);

// Starts a manager and N-1 workers of `ernicctl emulator` as child processes, each in its own
// process group, watches them, and stops them: SIGTERM, bounded wait, SIGKILL.
class Supervisor {
 public:
  Supervisor() = default;
  ~Supervisor();
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  // Returns once every instance logged its readiness line and created its socket. Throws
  // std::runtime_error naming the instance and quoting its last log lines when one fails (the
  // others are stopped first).
  void start(const SupervisorConfig& config);
  // Empty while all run; else e.g. "instance 2 (worker, pid 123) exited with status 1; last
  // log lines: ...", once for each instance that exited. Does not wait for exits (only for a
  // check_health() running in another thread).
  std::string check_alive();
  // Empty while no instance lost a mesh peer; else e.g. "instance 1 (manager, pid 123) lost 1
  // mesh peer(s); last log lines: ...". An instance counts the established peers it lost
  // (closed, silent past the heartbeat timeout, removed) as `mesh_nodes_lost` in its stats
  // file, which it rewrites at once when its peers change. Never blocks.
  std::string check_mesh() const;
  // check_alive(), then check_mesh(); a lost peer is often an instance dying at that moment
  // (its peers see the socket close before its exit can be reaped), and its exit names the
  // cause better than the loss: so after a loss, waits up to `dying` for an instance to exit.
  // From the first exit on (seen by either call), always that exit: the run's mesh broke then.
  std::string check_health(std::chrono::milliseconds dying = std::chrono::milliseconds(1000));
  // SIGTERM to every process group, wait up to `grace`, then SIGKILL. Idempotent.
  void stop(std::chrono::milliseconds grace = std::chrono::milliseconds(2000));
  const std::vector<InstanceInfo>& instances() const { return instances_; }
  // Leaves the instances running when this object goes away (`ernicctl up`); stop() and the
  // destructor no longer touch them. They keep their own process groups.
  void detach() { detached_ = true; }

  // The last `count` lines of a log file (for error messages).
  static std::string tail(const std::filesystem::path& file, int count);
  // An instance's stats file: its `key : value` lines (indented lines, the per-QP sections
  // rocm-ernic's tools read, are left out).
  static std::map<std::string, std::string> read_stats(const std::filesystem::path& file);
  // The same from the file's text (an instance on another machine, read over SSH).
  static std::map<std::string, std::string> parse_stats(const std::string& text);

 private:
  void launch(InstanceInfo& info, const std::vector<std::string>& args);
  void wait_ready(InstanceInfo& info);
  std::string describe_exit(const InstanceInfo& info, int status) const;
  // Sends SIGTERM to instance `index`'s group, or (wait) reaps it, SIGKILLing it at `deadline`.
  void terminate(std::size_t index, std::chrono::steady_clock::time_point deadline, bool wait);

  // check_alive() without the lock: reaps what exited, notes the first exit, says which.
  std::string reap_exited();
  // Marks instance `index` reaped with wait status `status`, notes it if it is the first exit,
  // and describes it.
  std::string note_exit(std::size_t index, int status);

  SupervisorConfig config_;
  std::vector<InstanceInfo> instances_;
  std::vector<bool> reaped_;
  std::mutex health_mutex_;  // check_alive() and check_health() come from two threads of a run
  std::string first_exit_;   // what check_health() says from the first exit on
  bool detached_ = false;
};

}  // namespace ernic::emu
