// A platform of fakes for driving the real executor in-process (ninja's build_test.cc drives
// its Builder with a fake command runner and a virtual file system): hosts that answer commands
// from a script, a provider and an emulator kind that record what they create, a setup step that
// records what it applies. Everything that happens is appended to one World log, in order.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "emulators/emulator_kind.h"
#include "hosts/provider.h"
#include "run/command_runner.h"
#include "scenario/platform.h"

namespace ernic::testing {

// How a scripted command behaves.
struct Scripted {
  CommandResult result;  // what wait() returns (exit 0 and no output by default)
  bool listens = true;   // a server: its port listens once it was polled `polls_to_ready` times
  int polls_to_ready = 0;
  bool exits_early = false;        // a server that exits before it is ready
  bool hangs = false;              // runs until stopped or interrupted (wait() blocks)
  std::function<void()> on_start;  // runs when the command starts (e.g. to interrupt the run)
  // Stdout handed to the command's output sink this long after it started, as a tool prints it
  // (wait() delivers it on time); when `result.out` is empty, it becomes their concatenation.
  std::vector<std::pair<std::chrono::milliseconds, std::string>> timed_stdout;
  // Hand `result.out` and `result.err` to the output sink when the command ends, as a real
  // command's step log shows them (off: only `timed_stdout` reaches the sink).
  bool logs_result = false;
};

// What the fakes saw, in order, and the script they answer from.
class World {
 public:
  void log(std::string event);
  std::vector<std::string> events() const;
  // Events that start with `prefix`.
  std::vector<std::string> events_starting(const std::string& prefix) const;

  // The script: called for every command a fake host starts.
  std::function<Scripted(const std::string& host, const CommandSpec& spec)> script =
      [](const std::string&, const CommandSpec&) { return Scripted{}; };
  // Set to a reason to make every fake host report itself gone.
  std::string vanished;
  // How many is_listening() polls each host saw.
  std::map<std::string, int> polls;
  // Programs no fake host has (has_program() says no).
  std::set<std::string> missing_programs;

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> events_;
};

class FakeHost final : public Host {
 public:
  FakeHost(World& world, std::string name, std::string address)
      : world_(world), name_(std::move(name)), address_(std::move(address)) {}
  const std::string& name() const override { return name_; }
  std::string address() const override { return address_; }
  std::string describe() const override { return name_ + " (fake)"; }
  std::unique_ptr<RunningCommand> start(const CommandSpec& spec, OutputSink* sink) override;
  void upload(std::string_view, const std::string& path, int) override {
    world_.log("upload " + path + " to " + name_);
  }
  // Logs "listening on HOST:PORT" when it answers yes.
  bool is_listening(std::uint16_t port) override;
  std::string check_alive() override { return world_.vanished; }
  bool has_program(const std::string& program) override {
    return !world_.missing_programs.contains(program);
  }

 private:
  World& world_;
  std::string name_;
  std::string address_;
  Scripted server_;  // the last command started, asked whether it listens
  int server_polls_ = 0;
};

// A host provider of fakes standing in for `real` (its name and schema, so real scenarios load
// and plan): `create` logs, pushes an undo per host, and builds its "network" with one command
// per host through the runner, as netns does.
class FakeProvider final : public HostProvider {
 public:
  FakeProvider(World& world, const HostProvider& real) : world_(world), real_(real) {}
  std::string_view name() const override { return real_.name(); }
  std::string_view description() const override { return "fake hosts"; }
  const ObjectSchema& host_schema() const override { return real_.host_schema(); }
  const ObjectSchema* settings_schema() const override { return real_.settings_schema(); }
  std::vector<std::string> planned_addresses(const std::vector<HostSpec>& hosts,
                                             const Config& scenario) const override;
  bool acts_only_through_runner() const override { return true; }
  std::vector<std::unique_ptr<Host>> create(const std::vector<HostSpec>& hosts,
                                            ProviderContext& context) override;
  // Logs "attach PROVIDER HOST" and pushes nothing; a host named in `gone` throws.
  std::vector<std::unique_ptr<Host>> attach(const std::vector<HostSpec>& hosts,
                                            const std::vector<AttachedHost>& recorded,
                                            ProviderContext& context) override;
  std::vector<std::string> gone;
  // Throw from create() once this many hosts exist (-1: never).
  int fail_after = -1;
  // Runs in every host's undo, after it is logged (e.g. to interrupt the teardown).
  std::function<void()> on_remove;

 private:
  World& world_;
  const HostProvider& real_;
};

// An emulator kind of fakes standing in for `real`: its instances give the facts the embedded
// emulator's do (a load-generator socket per instance), and `dead` makes one of them die.
class FakeEmulatorKind final : public EmulatorKind {
 public:
  FakeEmulatorKind(World& world, const EmulatorKind& real) : world_(world), real_(real) {}
  std::string_view name() const override { return real_.name(); }
  std::string_view description() const override { return "fake instances"; }
  const ObjectSchema& schema() const override { return real_.schema(); }
  int instance_count(const Config& config) const override { return real_.instance_count(config); }
  std::vector<std::string> placement_hosts(const Config& config) const override {
    return real_.placement_hosts(config);
  }
  void check(const Config& config, const std::vector<std::string>& host_names,
             Diagnostics& out) const override {
    real_.check(config, host_names, out);
  }
  std::vector<std::string> describe(const Config& config,
                                    const EmulatorContext& context) const override;
  HostFacts planned_facts(const Config& config, const EmulatorContext& context,
                          int instance) const override;
  std::unique_ptr<RunningEmulator> start(const Config& config, EmulatorContext& context) override;
  // Logs "attach N instances"; stops nothing.
  std::unique_ptr<RunningEmulator> attach(const std::vector<ManifestInstance>& instances,
                                          EmulatorContext& context) override;
  std::string dead;
  // From when `dead` shows in check_alive (set while the run goes on: the watchdog reads it).
  std::atomic<std::chrono::steady_clock::time_point> dead_from{
      std::chrono::steady_clock::time_point::min()};

 private:
  World& world_;
  const EmulatorKind& real_;
};

// The built-in platform with every provider and emulator kind (but `none`) replaced by a fake
// of the same name; the real setup steps and tools, whose commands go to the fake hosts.
struct FakePlatform {
  explicit FakePlatform(World& world);
  std::vector<std::unique_ptr<FakeProvider>> providers;
  std::vector<std::unique_ptr<FakeEmulatorKind>> kinds;
  Platform platform;

  FakeProvider& provider(const std::string& name);
  FakeEmulatorKind& kind(const std::string& name);
};

}  // namespace ernic::testing
