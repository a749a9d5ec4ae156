#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "emulators/instance_manifest.h"
#include "history/distribution.h"
#include "history/history_record.h"
#include "plan/plan.h"

namespace ernic {

struct Sample {
  int repetition = 1;
  bool warm = true;
  double duration_s = 0;  // the whole repetition, server start to parse
  double tool_s = 0;      // the client tool alone: what orchestration overhead is measured against
  std::map<std::string, double> metrics;
  std::map<std::string, Distribution> distributions;  // from ParseOutcome::distributions
  // Entries with several tenants: which one this is (1-based; 0 for a single tenant), and why
  // its repetition failed (empty: it passed; a failed tenant's sample has no metrics).
  int tenant = 0;
  std::string tenant_name;
  std::string failure;
  // Why each earlier attempt of this repetition failed, oldest first, when the tool declared
  // those failures retryable and it ran again (run/point_execution.cc); empty: the first counted.
  std::vector<std::string> retries;
};

enum class PointStatus { kPassed, kFailed, kSkipped };

struct PointResult {
  const PlannedPoint* point = nullptr;
  PointStatus status = PointStatus::kSkipped;
  std::string reason;  // why it failed or was skipped
  std::vector<std::filesystem::path> logs;
  std::string server_command;  // the first tenant's
  std::string client_command;
  // The program that measured the point (Benchmark::measured_by), the first tenant's; empty:
  // the tool itself.
  std::string measured_by;
  // Entries with several tenants: every tenant's command lines by tenant name ("server",
  // "client"), the last repetition's.
  std::map<std::string, std::map<std::string, std::string>> tenant_commands;
  std::uint16_t port = 0;  // the port the point's server listened on (0: no server)
  std::vector<Sample> samples;
  nlohmann::json details;  // the last repetition's parser output
  double duration_s = 0;
  // What each emulator instance (by id) moved while the point ran (with the points it ran
  // together with); empty without instances.
  std::map<int, InstanceTraffic> instances;
};

struct HostRecord {
  std::string name;
  std::string provider;
  std::string address;
  double t_init_s = 0;
  std::map<std::string, std::string> facts;
  bool attached = false;  // made by `ernicctl up`: its T_init is in the up run's record
};

// `run --attach`: the `up` run whose hosts and instances a run used.
struct AttachedTo {
  std::string up_run_dir;
  std::string up_run_token;
  std::string up_since;
  std::vector<std::string> rebuilt;  // instances whose program was rebuilt since they started
};

enum class RunStatus { kPassed, kFailed, kIncomplete };

// Everything a run produced; the history record and the summary are made from this.
struct RunResult {
  RunStatus status = RunStatus::kPassed;
  std::string fatal_error;  // set when the run stopped early
  std::filesystem::path run_dir;
  std::string run_name;   // the run directory's name
  std::string run_token;  // names this run's namespaces, domains and temporary files
  std::chrono::system_clock::time_point started;
  std::chrono::system_clock::time_point finished;
  std::vector<HostRecord> hosts;
  std::map<std::string, std::string> tool_versions;
  std::vector<PointResult> points;
  nlohmann::json emulator;     // what the emulator kind records about its instances
  InstanceManifest instances;  // the instances' manifest (pids, sockets, logs); empty without any
  bool left_running = false;   // `ernicctl up` left hosts and instances running
  std::string selection;       // the plan's point selection; empty when every point was run
  std::optional<AttachedTo> attached_to;
};

const char* to_string(PointStatus status);
const char* to_string(RunStatus status);

}  // namespace ernic
