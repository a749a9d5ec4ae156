#include "run/command_runner.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <random>

#include "hosts/process_command.h"

namespace ernic {
namespace {

std::string random_token() {
  std::random_device device;
  return fmt::format("{:06x}", device() & 0xffffff);
}

}  // namespace

RealCommandRunner::RealCommandRunner() : token_(random_token()) {}

std::filesystem::path RealCommandRunner::make_run_dir(const std::filesystem::path& runs_dir,
                                                      const std::string& scenario_name,
                                                      std::string& run_name) {
  auto now = std::chrono::system_clock::now();
  std::string base = fmt::format("{:%Y%m%dT%H%M%SZ}-{}",
                                 std::chrono::floor<std::chrono::seconds>(now), scenario_name);
  std::filesystem::create_directories(runs_dir);
  for (int attempt = 1;; ++attempt) {
    run_name = attempt == 1 ? base : fmt::format("{}-{}", base, attempt);
    auto dir = runs_dir / run_name;
    std::error_code error;
    if (std::filesystem::create_directory(dir, error)) {
      return dir;
    }
    if (error) {
      throw std::runtime_error(
          fmt::format("cannot create run directory {}: {}", dir.string(), error.message()));
    }
  }
}

std::unique_ptr<RunningEmulator> RealCommandRunner::start_emulator(EmulatorKind& kind,
                                                                   const Config& config,
                                                                   EmulatorContext& context) {
  return kind.start(config, context);
}

std::vector<std::unique_ptr<Host>> RealCommandRunner::create_hosts(
    HostProvider& provider, const std::vector<HostSpec>& specs, ProviderContext& context) {
  return provider.create(specs, context);
}

void RealCommandRunner::apply_setup(const SetupStep& step, const SetupEntry& entry, Host& host,
                                    HostFacts& facts, OutputSink* log) {
  step.apply(entry.config, host, facts, log);
}

std::unique_ptr<RunningEmulator> RealCommandRunner::attach_emulator(
    EmulatorKind& kind, const std::vector<ManifestInstance>& instances, EmulatorContext& context) {
  return kind.attach(instances, context);
}

std::vector<std::unique_ptr<Host>> RealCommandRunner::attach_hosts(
    HostProvider& provider, const std::vector<HostSpec>& specs,
    const std::vector<AttachedHost>& recorded, ProviderContext& context) {
  return provider.attach(specs, recorded, context);
}

CommandResult RealCommandRunner::run_here(const CommandSpec& spec) {
  // Plumbing must finish even while Ctrl-C tears the run down, so it is not interruptible.
  ProcessCommand command(spec, nullptr, "", /*interruptible=*/false);
  return command.wait(Clock::now() + spec.timeout);
}

std::unique_ptr<RunningCommand> RealCommandRunner::start(Host& host, std::string_view /*role*/,
                                                         const CommandSpec& spec,
                                                         OutputSink* sink) {
  return host.start(spec, sink);
}

bool RealCommandRunner::is_listening(Host& host, std::uint16_t port) {
  return host.is_listening(port);
}

std::uint16_t RealCommandRunner::server_port(Host& server, std::uint16_t planned) {
  return server.listens_in_this_machines_stack() ? ports_.take() : planned;
}

void RealCommandRunner::tear_down(CleanupStack& cleanup,
                                  const CleanupStack::ErrorHandler& on_error) {
  cleanup.run_all(on_error);
}

}  // namespace ernic
