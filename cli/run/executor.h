#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/cleanup_stack.h"
#include "base/status.h"
#include "emulators/emulator_kind.h"
#include "hosts/host.h"
#include "plan/plan.h"
#include "run/attachment.h"
#include "run/command_runner.h"
#include "run/run_result.h"
#include "scenario/platform.h"

namespace ernic {

struct TenantRun;  // one tenant's side of a repetition (point_execution.cc)

// A point being run and where its result goes.
struct PointRun {
  const PlannedPoint* point = nullptr;
  PointResult* result = nullptr;
};

enum class KeepPolicy { kNever, kOnFailure, kAlways };

struct RunOptions {
  std::filesystem::path runs_dir = "runs";
  KeepPolicy keep = KeepPolicy::kNever;
  // `ernicctl up`: stop after setup and leave hosts and emulator instances running (when
  // everything came up; otherwise tear down as usual).
  bool bring_up_only = false;
  // `ernicctl run --attach`: run against what `up` left (hosts, instances); create nothing and
  // tear nothing of it down. Every sample is warm.
  const Attachment* attach = nullptr;
};

// Carries out a plan (ninja's Builder): starts the emulator instances, creates the hosts,
// applies the setup steps, runs every point with the server/client choreography, and tears
// everything down through the cleanup stack whatever happens. It never decides what to run, and
// it touches the world only through its CommandRunner: with DryRunCommandRunner the same walk
// is the dry run.
class Executor {
 public:
  Executor(const Plan& plan, const Platform& platform, CommandRunner& runner, RunOptions options,
           Status& status);
  RunResult run();

 private:
  void preflight();
  void check_attachment();
  void start_emulator();
  void attach_emulator();
  // The provider groups that hold a host emulator instances run on (`on: HOST`: they must exist
  // before the instances start), or (false) the others.
  void create_hosts(bool placement_groups);
  void attach_hosts();
  void attach_hosts_to_instances();
  void check_programs();
  void apply_setup();
  // The scenario's setup entries, after the ones every run applies by itself.
  std::vector<SetupEntry> setup_entries() const;
  void collect_tool_versions();
  void run_points();
  // Points that start together (one, or a concurrent group's), every repetition.
  void run_together(const std::vector<int>& members);
  // One repetition of every tenant of every point given; false when any of them failed.
  bool run_repetition(const std::vector<PointRun>& points, int repetition);
  // `retried`: the failed attempt of this repetition it runs again (its log goes on), or null.
  TenantRun make_tenant_run(const PlannedPoint& point, const Tenant& tenant, int number,
                            int repetition, PointResult& result, TenantRun* retried = nullptr);
  void start_server(TenantRun& run);
  void await_server(TenantRun& run);
  void start_client(TenantRun& run);
  void await_client(TenantRun& run);
  std::optional<Sample> parse_tenant(TenantRun& run, int repetition);
  std::string together_text(const std::vector<PointRun>& points,
                            const std::vector<TenantRun>& runs) const;
  std::string environment_gone();
  void stop_if_environment_gone();
  void settle_status();
  void teardown();
  Host& host(const std::string& name);
  EmulatorContext emulator_context();

  const Plan& plan_;
  const Platform& platform_;
  CommandRunner& runner_;
  RunOptions options_;
  Status& status_;
  CleanupStack cleanup_;
  RunResult result_;
  std::string run_token_;
  std::unique_ptr<RunningEmulator> emulator_;
  std::vector<std::unique_ptr<Host>> hosts_;
  std::map<std::string, HostFacts> facts_;
  bool first_sample_ = true;
};

// Thrown for problems found before anything started (a missing tool): exit status 2.
class PreflightError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Thrown when the user interrupted the run (Ctrl-C, SIGTERM).
class RunInterrupted : public std::runtime_error {
 public:
  RunInterrupted() : std::runtime_error("interrupted") {}
};

// Throws RunInterrupted once the run was asked to stop (Ctrl-C, SIGTERM, a dead instance):
// called between the steps of a run and in its waits.
void throw_if_interrupted();

// A file-safe version of a point id or host name, for log file names.
std::string file_safe(const std::string& text);

}  // namespace ernic
