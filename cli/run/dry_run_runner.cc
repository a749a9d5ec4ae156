// `ernicctl run --dry-run`: the executor's own walk of the plan, with every action printed
// instead of done.
#include <fmt/format.h>

#include "base/units.h"
#include "run/command_runner.h"
#include "run/dry_run_host.h"

namespace ernic {
namespace {

// A command that has already exited successfully with no output.
class PrintedCommand final : public RunningCommand {
 public:
  bool wait_for_output(const std::regex&, Clock::time_point) override { return false; }
  bool running() override { return false; }
  CommandResult wait(Clock::time_point) override { return result(); }
  CommandResult stop(std::chrono::milliseconds) override { return result(); }

 private:
  static CommandResult result() {
    CommandResult done;
    done.exit_code = 0;
    return done;
  }
};

// The instances as the dry run knows them: their planned facts; nothing runs.
class PlannedEmulator final : public RunningEmulator {
 public:
  PlannedEmulator(std::vector<HostFacts> facts, std::string kind)
      : facts_(std::move(facts)), kind_(std::move(kind)) {}
  std::string check_alive() override { return ""; }
  int instance_count() const override { return static_cast<int>(facts_.size()); }
  HostFacts facts_for(int instance) const override { return facts_.at(instance - 1); }
  nlohmann::json record() const override { return {{"kind", kind_}}; }
  InstanceManifest manifest() const override { return {}; }

 private:
  std::vector<HostFacts> facts_;
  std::string kind_;
};

}  // namespace

void DryRunCommandRunner::section(const std::string& heading) {
  if (heading != section_) {
    section_ = heading;
    fmt::print(out_, "\n{}:\n", heading);
  }
}

std::filesystem::path DryRunCommandRunner::make_run_dir(const std::filesystem::path& runs_dir,
                                                        const std::string& scenario_name,
                                                        std::string& run_name) {
  run_name = "<time>-" + scenario_name;
  return runs_dir / run_name;
}

std::unique_ptr<RunningEmulator> DryRunCommandRunner::start_emulator(EmulatorKind& kind,
                                                                     const Config& config,
                                                                     EmulatorContext& context) {
  section(fmt::format("emulator ({})", kind.name()));
  for (const auto& line : kind.describe(config, context)) {
    fmt::print(out_, "    $ {}\n", line);
  }
  context.cleanup->push(fmt::format("stop the {} emulator instances", kind.name()), [] {});
  std::vector<HostFacts> facts;
  for (int id = 1; id <= kind.instance_count(config); ++id) {
    facts.push_back(kind.planned_facts(config, context, id));
  }
  return std::make_unique<PlannedEmulator>(std::move(facts), std::string(kind.name()));
}

std::vector<std::unique_ptr<Host>> DryRunCommandRunner::create_hosts(
    HostProvider& provider, const std::vector<HostSpec>& specs, ProviderContext& context) {
  section("hosts");
  auto addresses = provider.planned_addresses(specs, context.scenario);
  for (std::size_t i = 0; i < specs.size(); ++i) {
    fmt::print(out_, "  {} ({}, {})\n", specs[i].name, provider.name(),
               addresses[i].empty() ? "address known once up" : addresses[i]);
  }
  if (provider.acts_only_through_runner()) {
    return provider.create(specs, context);  // its commands come back through run_here()
  }
  for (const auto& line : provider.describe(specs, context)) {
    fmt::print(out_, "    $ {}\n", line);
  }
  std::vector<std::unique_ptr<Host>> hosts;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    hosts.push_back(std::make_unique<DryRunHost>(specs[i].name, addresses[i]));
  }
  return hosts;
}

std::unique_ptr<RunningEmulator> DryRunCommandRunner::attach_emulator(
    EmulatorKind& kind, const std::vector<ManifestInstance>& instances, EmulatorContext& context) {
  section(fmt::format("emulator ({}, attached: left running by `ernicctl up`)", kind.name()));
  for (const auto& instance : instances) {
    fmt::print(out_, "  instance {} {} pid {} {}\n", instance.id,
               instance.role.empty() ? "?" : instance.role, instance.pid, instance.socket);
  }
  return kind.attach(instances, context);
}

std::vector<std::unique_ptr<Host>> DryRunCommandRunner::attach_hosts(
    HostProvider& provider, const std::vector<HostSpec>& specs,
    const std::vector<AttachedHost>& recorded, ProviderContext& /*context*/) {
  section("hosts (attached: left running by `ernicctl up`)");
  std::vector<std::unique_ptr<Host>> hosts;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    fmt::print(out_, "  {} ({}, {})\n", specs[i].name, provider.name(), recorded[i].address);
    hosts.push_back(std::make_unique<DryRunHost>(specs[i].name, recorded[i].address));
  }
  return hosts;
}

void DryRunCommandRunner::apply_setup(const SetupStep& step, const SetupEntry& entry, Host& host,
                                      HostFacts& facts, OutputSink* /*log*/) {
  section("setup");
  fmt::print(out_, "  {} on {}\n", step.kind(), host.name());
  for (const auto& line : step.describe(entry.config, host)) {
    fmt::print(out_, "    $ {}\n", line);
  }
  // What the step will have found, as placeholders in the benchmark command lines.
  for (const auto& fact : step.recorded_facts()) {
    facts[fact] = "<" + fact + ">";
  }
}

CommandResult DryRunCommandRunner::run_here(const CommandSpec& spec) {
  fmt::print(out_, "    $ {}\n", spec.display());
  CommandResult done;
  done.exit_code = 0;
  return done;
}

std::unique_ptr<RunningCommand> DryRunCommandRunner::start(Host& host, std::string_view role,
                                                           const CommandSpec& spec,
                                                           OutputSink* /*sink*/) {
  if (section_ != "points") {
    section("before the points");
  }
  fmt::print(out_, "    {} on {}: {}\n", role, host.name(), spec.display());
  return std::make_unique<PrintedCommand>();
}

void DryRunCommandRunner::starts_together(const std::string& what) {
  fmt::print(out_, "    every server ready; {}\n", what);
}

void DryRunCommandRunner::begin_point(const std::string& id, int index, int total, int repetition,
                                      int repetitions, std::chrono::milliseconds timeout) {
  section("points");
  fmt::print(out_, "  [{}/{}] {}{}, timeout {}\n", index + 1, total, id,
             repetitions > 1 ? fmt::format("  repetition {}/{}", repetition, repetitions) : "",
             format_duration_short(timeout));
}

void DryRunCommandRunner::tear_down(CleanupStack& cleanup,
                                    const CleanupStack::ErrorHandler& /*on_error*/) {
  auto actions = cleanup.release();
  if (actions.empty()) {
    return;
  }
  section("teardown (newest first)");
  for (auto it = actions.rbegin(); it != actions.rend(); ++it) {
    fmt::print(out_, "  {}\n", *it);
  }
}

}  // namespace ernic
