#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/cleanup_stack.h"
#include "emulators/emulator_kind.h"
#include "hosts/host.h"
#include "hosts/provider.h"
#include "run/port_block.h"
#include "scenario/scenario.h"
#include "setup/setup_step.h"

namespace ernic {

// Everything the executor does to the world goes through this one interface (ninja's
// CommandRunner). The executor walks the plan once, in one order, for a run and for a dry run;
// only the runner differs: RealCommandRunner does each thing, DryRunCommandRunner prints it. So
// the dry run cannot drift from the run.
class CommandRunner : public LocalCommandRunner {
 public:
  virtual ~CommandRunner() = default;

  // False for the dry run: commands "succeed" at once with no output, so the executor parses
  // nothing and records nothing.
  virtual bool executes() const = 0;

  // The run's unique token (names namespaces, domains, sockets); a placeholder in a dry run.
  virtual std::string run_token() = 0;
  // Creates the run directory under `runs_dir`; `run_name` receives its name.
  virtual std::filesystem::path make_run_dir(const std::filesystem::path& runs_dir,
                                             const std::string& scenario_name,
                                             std::string& run_name) = 0;

  virtual std::unique_ptr<RunningEmulator> start_emulator(EmulatorKind& kind, const Config& config,
                                                          EmulatorContext& context) = 0;
  // One provider's hosts, all at once (some providers build a network between them).
  virtual std::vector<std::unique_ptr<Host>> create_hosts(HostProvider& provider,
                                                          const std::vector<HostSpec>& specs,
                                                          ProviderContext& context) = 0;
  // `run --attach`: what `ernicctl up` left, instead of starting and creating; nothing of it
  // goes onto the cleanup stack.
  virtual std::unique_ptr<RunningEmulator> attach_emulator(
      EmulatorKind& kind, const std::vector<ManifestInstance>& instances,
      EmulatorContext& context) = 0;
  virtual std::vector<std::unique_ptr<Host>> attach_hosts(HostProvider& provider,
                                                          const std::vector<HostSpec>& specs,
                                                          const std::vector<AttachedHost>& recorded,
                                                          ProviderContext& context) = 0;
  virtual void apply_setup(const SetupStep& step, const SetupEntry& entry, Host& host,
                           HostFacts& facts, OutputSink* log) = 0;

  // run_here (LocalCommandRunner): a command on this machine itself, for providers that build
  // hosts by command.
  // A server, client or probe on a host; `role` says which, for the dry run's listing.
  virtual std::unique_ptr<RunningCommand> start(Host& host, std::string_view role,
                                                const CommandSpec& spec, OutputSink* sink) = 0;
  virtual bool is_listening(Host& host, std::uint16_t port) = 0;
  // Empty while `host` is usable, else why it is gone; the same for the emulator's instances.
  virtual std::string check_alive(Host& host) = 0;
  virtual std::string check_alive(RunningEmulator& emulator) = 0;
  // The port a point's server on `server` listens on: the planned one, unless the server
  // listens in this machine's own network stack, where concurrent runs meet.
  virtual std::uint16_t server_port(Host& server, std::uint16_t planned) = 0;

  // Several clients (a point's tenants, a concurrent group's points) are about to start back to
  // back, every server being ready: `what` says which (the dry run prints it).
  virtual void starts_together(const std::string& /*what*/) {}
  // A point begins (the dry run prints its heading).
  virtual void begin_point(const std::string& id, int index, int total, int repetition,
                           int repetitions, std::chrono::milliseconds timeout) = 0;
  // Runs the cleanup stack, newest first (the dry run lists it).
  virtual void tear_down(CleanupStack& cleanup, const CleanupStack::ErrorHandler& on_error) = 0;
};

// The runner of a real run.
class RealCommandRunner final : public CommandRunner {
 public:
  RealCommandRunner();
  bool executes() const override { return true; }
  std::string run_token() override { return token_; }
  std::filesystem::path make_run_dir(const std::filesystem::path& runs_dir,
                                     const std::string& scenario_name,
                                     std::string& run_name) override;
  std::unique_ptr<RunningEmulator> start_emulator(EmulatorKind& kind, const Config& config,
                                                  EmulatorContext& context) override;
  std::vector<std::unique_ptr<Host>> create_hosts(HostProvider& provider,
                                                  const std::vector<HostSpec>& specs,
                                                  ProviderContext& context) override;
  std::unique_ptr<RunningEmulator> attach_emulator(EmulatorKind& kind,
                                                   const std::vector<ManifestInstance>& instances,
                                                   EmulatorContext& context) override;
  std::vector<std::unique_ptr<Host>> attach_hosts(HostProvider& provider,
                                                  const std::vector<HostSpec>& specs,
                                                  const std::vector<AttachedHost>& recorded,
                                                  ProviderContext& context) override;
  void apply_setup(const SetupStep& step, const SetupEntry& entry, Host& host, HostFacts& facts,
                   OutputSink* log) override;
  CommandResult run_here(const CommandSpec& spec) override;
  std::unique_ptr<RunningCommand> start(Host& host, std::string_view role, const CommandSpec& spec,
                                        OutputSink* sink) override;
  bool is_listening(Host& host, std::uint16_t port) override;
  std::string check_alive(Host& host) override { return host.check_alive(); }
  std::string check_alive(RunningEmulator& emulator) override { return emulator.check_alive(); }
  std::uint16_t server_port(Host& server, std::uint16_t planned) override;
  void begin_point(const std::string&, int, int, int, int, std::chrono::milliseconds) override {}
  void tear_down(CleanupStack& cleanup, const CleanupStack::ErrorHandler& on_error) override;

 private:
  std::string token_;
  PortBlock ports_;
};

// The runner of `ernicctl run --dry-run`: prints, in the order the run would do them, every
// instance it would start, every host it would create and how, every setup action, and each
// point's server and client command lines; starts nothing. Values known only at run time
// appear as <placeholders> (<token>, <mesh-token>, <manager-mesh-port>, <ADDRESS of HOST>,
// setup facts such as <gid_index>).
class DryRunCommandRunner final : public CommandRunner {
 public:
  explicit DryRunCommandRunner(std::FILE* out = stdout) : out_(out) {}
  bool executes() const override { return false; }
  std::string run_token() override { return "<token>"; }
  std::filesystem::path make_run_dir(const std::filesystem::path& runs_dir,
                                     const std::string& scenario_name,
                                     std::string& run_name) override;
  std::unique_ptr<RunningEmulator> start_emulator(EmulatorKind& kind, const Config& config,
                                                  EmulatorContext& context) override;
  std::vector<std::unique_ptr<Host>> create_hosts(HostProvider& provider,
                                                  const std::vector<HostSpec>& specs,
                                                  ProviderContext& context) override;
  std::unique_ptr<RunningEmulator> attach_emulator(EmulatorKind& kind,
                                                   const std::vector<ManifestInstance>& instances,
                                                   EmulatorContext& context) override;
  std::vector<std::unique_ptr<Host>> attach_hosts(HostProvider& provider,
                                                  const std::vector<HostSpec>& specs,
                                                  const std::vector<AttachedHost>& recorded,
                                                  ProviderContext& context) override;
  void apply_setup(const SetupStep& step, const SetupEntry& entry, Host& host, HostFacts& facts,
                   OutputSink* log) override;
  CommandResult run_here(const CommandSpec& spec) override;
  std::unique_ptr<RunningCommand> start(Host& host, std::string_view role, const CommandSpec& spec,
                                        OutputSink* sink) override;
  bool is_listening(Host&, std::uint16_t) override { return true; }
  std::string check_alive(Host&) override { return ""; }
  std::string check_alive(RunningEmulator&) override { return ""; }
  std::uint16_t server_port(Host&, std::uint16_t planned) override { return planned; }
  void starts_together(const std::string& what) override;
  void begin_point(const std::string& id, int index, int total, int repetition, int repetitions,
                   std::chrono::milliseconds timeout) override;
  void tear_down(CleanupStack& cleanup, const CleanupStack::ErrorHandler& on_error) override;

 private:
  void section(const std::string& heading);
  std::FILE* out_;
  std::string section_;
};

}  // namespace ernic
