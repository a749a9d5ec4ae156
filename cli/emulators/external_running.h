// The instances of `kind: external` once they are spawned, on this machine (external.cc) or on
// the machines the list form places them on (external_placed.cc): one readiness wait, one
// liveness check, one record and manifest for both.
#pragma once

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "emulators/emulator_kind.h"
#include "emulators/external.h"

namespace ernic {

// One spawned server instance, wherever it runs.
class ExternalInstance {
 public:
  explicit ExternalInstance(ExternalInstancePlan plan) : plan_(std::move(plan)) {}
  virtual ~ExternalInstance() = default;
  ExternalInstance(const ExternalInstance&) = delete;
  ExternalInstance& operator=(const ExternalInstance&) = delete;

  const ExternalInstancePlan& plan() const { return plan_; }
  // "external emulator instance 1 (manager, pid 12)" or "... (manager on HOST)".
  virtual std::string name() const = 0;
  // 0 when the pid is another machine's.
  virtual long pid() const = 0;
  struct Readiness {
    bool socket = false;  // its socket file exists
    bool logged = false;  // a line of its log or console matched the ready pattern
  };
  virtual Readiness readiness(const ExternalSettings& settings) = 0;
  // Empty while it runs; otherwise how it ended ("exited with status 3").
  virtual std::string ended() = 0;
  // Waits until `until` or until it ends; false when the run was interrupted.
  virtual bool pause(Clock::time_point until) = 0;
  // Its last log and console lines, indented.
  virtual std::string log_tail() = 0;
  // SIGTERM, `grace`, then SIGKILL.
  virtual void stop(std::chrono::milliseconds grace) = 0;
  // Whether it may run on after ernicctl exits (`ernicctl up`), and leaving it so.
  virtual bool may_outlive_ernicctl() const = 0;
  virtual void release() = 0;

 protected:
  ExternalInstancePlan plan_;
};

using ExternalInstances = std::vector<std::shared_ptr<ExternalInstance>>;

// Whether a line of `text` matches `pattern`.
bool has_matching_line(const std::string& text, const std::regex& pattern);
// The last `count` lines of `text`, each indented by four spaces.
std::string last_lines(const std::string& text, std::size_t count);

// Waits until the instance's socket exists and its log says it is ready; throws naming the
// instance, what was missing and its last log lines when it ends first or `deadline` passes.
void wait_ready(ExternalInstance& instance, const ExternalSettings& settings,
                Clock::time_point deadline);

// The manifest in rocm-ernic's service-layer format ({"instances":[{id, role, pid, ...}]}).
InstanceManifest external_manifest(const ExternalInstances& instances);
// What a host attached to the planned instance learns of it.
HostFacts external_facts(const ExternalInstancePlan& plan);

std::unique_ptr<RunningEmulator> running_external(ExternalSettings settings,
                                                  ExternalInstances instances, std::string version);

}  // namespace ernic
