#include "run/executor.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <condition_variable>
#include <fstream>
#include <mutex>
#include <random>
#include <set>
#include <stop_token>
#include <thread>

#include "common/interrupt.h"
#include "common/subprocess.h"
#include "common/units.h"
#include "emulators/emulator_kind.h"
#include "hosts/local_host.h"
#include "hosts/provider.h"
#include "run/leftovers.h"
#include "run/step_log.h"
#include "setup/setup_step.h"

namespace ernic {
namespace {

// How long a server may take to start listening before the point fails.
constexpr auto kServerReadyLimit = std::chrono::seconds(30);
// How long a server may take to exit after its client finished.
constexpr auto kServerExitLimit = std::chrono::seconds(5);
// How often hosts are asked whether they still answer while points run. An SSH host's answer is
// one round trip to its sshd (no process starts on it), so this costs the measurement nothing.
constexpr auto kHostCheckInterval = std::chrono::seconds(1);

class RunInterrupted : public std::runtime_error {
 public:
  RunInterrupted() : std::runtime_error("interrupted") {}
};

class EnvironmentGone : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

std::string random_token() {
  std::random_device device;
  return fmt::format("{:06x}", device() & 0xffffff);
}

std::string file_safe(const std::string& text) {
  std::string out;
  for (char c : text) {
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ||
            c == '=' || c == ',')
               ? c
               : '_';
  }
  return out.substr(0, 120);
}

std::filesystem::path make_run_dir(const std::filesystem::path& runs_dir, const std::string& name,
                                   std::string& run_name) {
  auto now = std::chrono::system_clock::now();
  std::string base =
      fmt::format("{:%Y%m%dT%H%M%SZ}-{}", std::chrono::floor<std::chrono::seconds>(now), name);
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

void check_interrupt() {
  if (Interrupt::requested()) {
    throw RunInterrupted();
  }
}

std::string first_line(const std::string& text) {
  auto end = text.find('\n');
  return text.substr(0, end);
}

}  // namespace

const char* to_string(PointStatus status) {
  switch (status) {
    case PointStatus::kPassed:
      return "passed";
    case PointStatus::kFailed:
      return "failed";
    case PointStatus::kSkipped:
      return "skipped";
  }
  return "?";
}

const char* to_string(RunStatus status) {
  switch (status) {
    case RunStatus::kPassed:
      return "passed";
    case RunStatus::kFailed:
      return "failed";
    case RunStatus::kIncomplete:
      return "incomplete";
  }
  return "?";
}

Executor::Executor(const Plan& plan, RunOptions options, Status& status)
    : plan_(plan), options_(std::move(options)), status_(status), run_token_(random_token()) {}

Host& Executor::host(const std::string& name) {
  for (auto& host : hosts_) {
    if (host->name() == name) {
      return *host;
    }
  }
  throw std::logic_error("unknown host " + name);
}

RunResult Executor::run() {
  const Scenario& scenario = *plan_.scenario;
  result_.started = std::chrono::system_clock::now();
  result_.run_token = run_token_;
  for (const auto& point : plan_.points) {
    PointResult pending;
    pending.point = &point;
    pending.reason = "not run";
    result_.points.push_back(std::move(pending));
  }
  preflight();  // throws PreflightError before anything exists
  // Held while this process lives: `ernicctl down` leaves a live run's resources alone.
  RunLock lock(run_token_);
  result_.run_dir = make_run_dir(options_.runs_dir, scenario.name, result_.run_name);
  {
    std::ofstream out(result_.run_dir / "scenario.yaml");
    out << scenario.resolved_yaml;
  }
  try {
    check_interrupt();
    start_emulator();
    check_interrupt();
    create_hosts();
    attach_hosts_to_instances();
    check_programs();
    check_interrupt();
    apply_setup();
    if (!options_.bring_up_only) {
      collect_tool_versions();
      run_points();
    }
  } catch (const RunInterrupted&) {
    result_.status = RunStatus::kIncomplete;
    result_.fatal_error = "interrupted";
  } catch (const std::exception& e) {
    result_.status = RunStatus::kFailed;
    result_.fatal_error = e.what();
  }
  if (result_.status == RunStatus::kPassed && !options_.bring_up_only) {
    for (const auto& point : result_.points) {
      if (point.status != PointStatus::kPassed) {
        result_.status = RunStatus::kFailed;
      }
    }
  }
  if (auto reason = Interrupt::abort_reason(); !reason.empty()) {
    result_.status = RunStatus::kFailed;
    result_.fatal_error = reason;
  } else if (Interrupt::requested()) {
    result_.status = RunStatus::kIncomplete;
    result_.fatal_error = "interrupted";
  }
  if (emulator_) {
    result_.emulator = emulator_->record();
    result_.instances = emulator_->manifest();
  } else {
    result_.emulator = {{"kind", scenario.emulator.kind}};
  }
  teardown();
  result_.finished = std::chrono::system_clock::now();
  return std::move(result_);
}

void Executor::preflight() {
  // Tools that run on this machine's filesystem (local and netns hosts) are checked before
  // anything is created; remote hosts are checked as soon as they answer.
  std::map<std::string, std::set<std::string>> missing;  // program -> hosts
  std::map<std::string, std::string> packages;
  auto local_kind = [&](const std::string& host_name) {
    const HostSpec* spec = plan_.scenario->find_host(host_name);
    return spec != nullptr && (spec->provider == "local" || spec->provider == "netns");
  };
  for (const auto& point : plan_.points) {
    for (const auto& program : point.tool->programs()) {
      for (const std::string& host_name : {point.entry->server, point.entry->client}) {
        if (!host_name.empty() && local_kind(host_name) && !program_in_path(program.name)) {
          missing[program.name].insert(host_name);
          packages[program.name] = program.debian_package;
        }
      }
    }
  }
  for (const auto& spec : plan_.scenario->hosts) {
    if (spec.provider == "netns" && !program_in_path("ip")) {
      missing["ip"].insert(spec.name);
      packages["ip"] = "iproute2";
    }
  }
  if (!missing.empty()) {
    std::string message;
    for (const auto& [program, hosts] : missing) {
      std::string names;
      for (const auto& name : hosts) {
        names += (names.empty() ? "" : ", ") + name;
      }
      message += fmt::format("{}{} is not installed (needed on {}); install the Debian package {}",
                             message.empty() ? "" : "\n", program, names, packages[program]);
    }
    throw PreflightError(message);
  }
}

void Executor::start_emulator() {
  const EmulatorSettings& settings = plan_.scenario->emulator;
  EmulatorKind* kind = find_emulator_kind(settings.kind);
  if (kind == nullptr || kind->instance_count(settings.config) == 0) {
    return;
  }
  status_.phase(fmt::format("starting {} emulator instances ({})",
                            kind->instance_count(settings.config), settings.kind));
  EmulatorContext context{.run_dir = result_.run_dir,
                          .run_token = run_token_,
                          .cleanup = &cleanup_,
                          .bring_up = options_.bring_up_only};
  emulator_ = kind->start(settings.config, context);
}

void Executor::attach_hosts_to_instances() {
  for (const auto& spec : plan_.scenario->hosts) {
    if (!spec.config["instance"]) {
      continue;
    }
    int instance = spec.config["instance"].as<int>();
    if (!emulator_) {
      throw std::runtime_error(
          fmt::format("host {} is attached to emulator instance {}, but the run "
                      "started no emulator",
                      spec.name, instance));
    }
    for (const auto& [key, value] : emulator_->facts_for(instance)) {
      facts_[spec.name][key] = value;
    }
  }
}

void Executor::create_hosts() {
  const Scenario& scenario = *plan_.scenario;
  std::vector<std::string> order;
  std::map<std::string, std::vector<HostSpec>> by_provider;
  for (const auto& spec : scenario.hosts) {
    if (!by_provider.contains(spec.provider)) {
      order.push_back(spec.provider);
    }
    by_provider[spec.provider].push_back(spec);
  }
  for (const auto& provider_name : order) {
    HostProvider* provider = find_host_provider(provider_name);
    auto& specs = by_provider[provider_name];
    status_.phase(fmt::format("creating {} {} host{}", specs.size(), provider_name,
                              specs.size() == 1 ? "" : "s"));
    ProviderContext context{.run_dir = result_.run_dir,
                            .run_token = run_token_,
                            .scenario = scenario.root,
                            .cleanup = &cleanup_,
                            .status = &status_};
    auto started = Clock::now();
    auto created = provider->create(specs, context);
    double t_init = std::chrono::duration<double>(Clock::now() - started).count();
    for (std::size_t i = 0; i < created.size(); ++i) {
      HostFacts platform = created[i]->platform_facts();
      // A guest measures its own T_init (domain start to verified SSH); others take the
      // provider's time for all of its hosts.
      double own_t_init = t_init;
      if (auto it = platform.find("t_init_s"); it != platform.end()) {
        own_t_init = std::strtod(it->second.c_str(), nullptr);
      }
      facts_[created[i]->name()].insert(platform.begin(), platform.end());
      HostRecord record{.name = created[i]->name(),
                        .provider = provider_name,
                        .address = created[i]->address(),
                        .t_init_s = own_t_init,
                        .facts = {}};
      result_.hosts.push_back(record);
      hosts_.push_back(std::move(created[i]));
    }
  }
}

void Executor::check_programs() {
  // Hosts not on this machine's filesystem are checked as soon as they answer, and every host
  // with the facts it now has (an emulator endpoint needs no perftest).
  std::set<std::string> checked;
  for (const auto& point : plan_.points) {
    for (const std::string& host_name : {point.entry->server, point.entry->client}) {
      if (host_name.empty()) {
        continue;
      }
      for (const auto& program : point.tool->programs_for(facts_[host_name])) {
        if (!checked.insert(host_name + "/" + program.name).second) {
          continue;
        }
        Host& h = host(host_name);
        if (!h.has_program(program.name)) {
          throw std::runtime_error(
              fmt::format("{} is not installed on {}; install the Debian package {}", program.name,
                          h.describe(), program.debian_package));
        }
      }
    }
  }
}

void Executor::apply_setup() {
  int index = 0;
  for (const auto& entry : plan_.scenario->setup) {
    const SetupStep* step = find_setup_step(entry.step);
    for (const auto& host_name : entry.hosts) {
      check_interrupt();
      Host& h = host(host_name);
      status_.phase(fmt::format("setup: {} on {}", entry.step, host_name));
      StepLog log(
          result_.run_dir / "steps" /
              fmt::format("setup-{:02}-{}-{}.log", ++index, entry.step, file_safe(host_name)),
          fmt::format("setup step {} on {}", entry.step, h.describe()));
      try {
        step->apply(entry.config, h, facts_[host_name], log.sink("setup"));
      } catch (const SetupError& e) {
        log.note(fmt::format("failed: {}", e.what()));
        throw std::runtime_error(fmt::format("setup step {} failed on {}: {} (log: {})", entry.step,
                                             host_name, e.what(), log.path().string()));
      }
      log.note("done");
    }
  }
  for (auto& record : result_.hosts) {
    record.facts = facts_[record.name];
  }
}

void Executor::collect_tool_versions() {
  std::set<std::string> seen;
  for (const auto& point : plan_.points) {
    if (!seen.insert(std::string(point.tool->tool())).second) {
      continue;
    }
    if (point.tool->tool() == "iperf3") {
      try {
        Host& h = host(point.entry->client);
        auto version = h.run(CommandSpec{.argv = {"iperf3", "--version"},
                                         .timeout = std::chrono::milliseconds(5000),
                                         .env = {}});
        std::string line = first_line(version.out);  // "iperf 3.12 (cJSON 1.7.15)"
        auto space = line.find(' ');
        result_.tool_versions["iperf3"] =
            line.substr(space + 1, line.find(' ', space + 1) - space - 1);
      } catch (const std::exception&) {
        // A version we cannot read is recorded as unknown, not a failed run.
      }
    }
  }
}

std::string Executor::environment_gone() {
  for (auto& h : hosts_) {
    if (auto reason = h->check_alive(); !reason.empty()) {
      return reason;
    }
  }
  return "";
}

void Executor::run_points() {
  // A dead emulator instance or a host that stopped answering must stop the run within seconds,
  // also in the middle of a point (a client talking to a frozen server would otherwise wait for
  // the point's timeout): the watchdog wakes every wait the way Ctrl-C does.
  std::jthread watchdog([this](std::stop_token stop) {
    std::mutex mutex;
    std::condition_variable_any wake;
    std::unique_lock lock(mutex);
    auto next_host_check = Clock::now() + kHostCheckInterval;
    while (!stop.stop_requested()) {
      if (emulator_) {
        if (auto dead = emulator_->check_alive(); !dead.empty()) {
          Interrupt::abort(fmt::format("emulator {}", dead));
          return;
        }
      }
      if (Clock::now() >= next_host_check) {
        if (auto gone = environment_gone(); !gone.empty()) {
          Interrupt::abort(fmt::format("stopping: {}", gone));
          return;
        }
        next_host_check = Clock::now() + kHostCheckInterval;
      }
      wake.wait_for(lock, stop, std::chrono::milliseconds(250), [] { return false; });
    }
  });
  int total = static_cast<int>(plan_.points.size());
  for (std::size_t i = 0; i < plan_.points.size(); ++i) {
    check_interrupt();
    const PlannedPoint& point = plan_.points[i];
    PointResult& result = result_.points[i];
    auto started = Clock::now();
    run_point(point, result);
    result.duration_s = std::chrono::duration<double>(Clock::now() - started).count();
    check_interrupt();
    std::string outcome = result.reason;
    if (result.status == PointStatus::kPassed && !result.samples.empty()) {
      std::string headline = point.tool->headline_metric(point.params);
      outcome = "";
      for (const auto& metric : point.tool->metrics()) {
        auto it = result.samples.back().metrics.find(metric.name);
        if (metric.name == headline && it != result.samples.back().metrics.end()) {
          outcome = fmt::format("{} {:.4g} {}", metric.name, it->second, metric.unit);
        }
      }
    }
    status_.point_finished(static_cast<int>(i), total, point.id,
                           result.status == PointStatus::kPassed, outcome);
    if (result.status == PointStatus::kFailed) {
      // A failed point may be the tool's fault or the environment's; only the second stops the run.
      if (emulator_) {
        if (auto dead = emulator_->check_alive(); !dead.empty()) {
          throw EnvironmentGone(fmt::format("stopping: emulator {}", dead));
        }
      }
      if (auto gone = environment_gone(); !gone.empty()) {
        throw EnvironmentGone(fmt::format("stopping: {}", gone));
      }
    }
  }
}

void Executor::run_point(const PlannedPoint& point, PointResult& result) {
  // Until every repetition passed, the point counts as failed: if the run stops in the middle
  // (Ctrl-C, a dead instance, a host that stopped answering) this is what the record says.
  result.status = PointStatus::kFailed;
  result.reason = "did not finish: the run stopped while it ran";
  for (int repetition = 1; repetition <= point.entry->repetitions; ++repetition) {
    status_.point_started(point.index, static_cast<int>(plan_.points.size()), point.id, repetition,
                          point.entry->repetitions);
    if (!run_repetition(point, repetition, result)) {
      return;
    }
  }
  result.status = PointStatus::kPassed;
  result.reason.clear();
}

bool Executor::run_repetition(const PlannedPoint& point, int repetition, PointResult& result) {
  const BenchmarkEntry& entry = *point.entry;
  PointContext context;
  context.benchmark = entry.name;
  context.id = point.id;
  context.params = point.params;
  context.server = entry.server.empty() ? nullptr : &host(entry.server);
  context.client = &host(entry.client);
  context.server_facts = entry.server.empty() ? HostFacts{} : facts_[entry.server];
  context.client_facts = facts_[entry.client];
  context.port = point.port;
  context.timeout = entry.timeout;

  std::string log_name = fmt::format("{:03}-{}{}.log", point.index + 1, file_safe(point.id),
                                     entry.repetitions > 1 ? fmt::format("-r{}", repetition) : "");
  StepLog log(result_.run_dir / "steps" / log_name,
              fmt::format("point {} repetition {}/{}", point.id, repetition, entry.repetitions));
  result.logs.push_back(log.path());
  auto fail = [&](std::string reason) {
    log.note("point failed: " + reason);
    result.reason = fmt::format("{} (log: {})", reason, log.path().string());
    return false;
  };

  point.tool->prepare(context);
  PointCommands commands = point.tool->commands(context);
  auto started = Clock::now();
  std::unique_ptr<RunningCommand> server;
  std::optional<CommandResult> server_result;
  try {
    if (commands.server) {
      result.server_command = commands.server->spec.display();
      log.command("server", *context.server, commands.server->spec);
      server = context.server->start(commands.server->spec, log.sink("server"));
      // Readiness is observed, never slept for.
      const Readiness& ready = commands.server->readiness;
      auto deadline = Clock::now() + std::min<Clock::duration>(kServerReadyLimit, entry.timeout);
      bool is_ready = false;
      while (!is_ready) {
        check_interrupt();
        if (ready.listening_port && context.server->is_listening(*ready.listening_port)) {
          is_ready = true;
        } else if (ready.output_line &&
                   server->wait_for_output(*ready.output_line,
                                           Clock::now() + std::chrono::milliseconds(20))) {
          is_ready = true;
        } else if (!server->running()) {
          CommandResult early = server->wait(Clock::now());
          log.result("server", early);
          std::string said = first_line(early.err.empty() ? early.out : early.err);
          return fail(fmt::format("server exited before it was ready ({}){}{}", early.describe(),
                                  said.empty() ? "" : ": ", said));
        } else if (Clock::now() >= deadline) {
          return fail(fmt::format("server not ready after {}: waited for {}",
                                  format_duration(kServerReadyLimit), ready.description));
        } else if (!ready.output_line) {
          std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
      }
    }
    result.client_command = commands.client.display();
    log.command("client", *context.client, commands.client);
    CommandResult client = context.client->run(commands.client, log.sink("client"));
    log.result("client", client);
    if (client.interrupted) {
      throw RunInterrupted();
    }
    if (server) {
      server_result =
          server->wait(Clock::now() + (client.ok() ? kServerExitLimit : std::chrono::seconds(0)));
      log.result("server", *server_result);
    }
    point.tool->cleanup(context);
    if (client.timed_out) {
      return fail(fmt::format("client timed out after {}", format_duration(entry.timeout)));
    }
    ParseOutcome outcome =
        point.tool->parse(server_result ? &*server_result : nullptr, client, context);
    result.details = outcome.details;
    if (!outcome.ok) {
      return fail(outcome.error.empty() ? fmt::format("client {}", client.describe())
                                        : outcome.error);
    }
    Sample sample;
    sample.repetition = repetition;
    sample.warm = !first_sample_;
    first_sample_ = false;
    sample.duration_s = std::chrono::duration<double>(Clock::now() - started).count();
    sample.tool_s = std::chrono::duration<double>(client.duration).count();
    sample.metrics = std::move(outcome.metrics);
    result.samples.push_back(std::move(sample));
    log.note("point passed");
    return true;
  } catch (const SpawnError& e) {
    point.tool->cleanup(context);
    return fail(e.what());
  }
}

void Executor::teardown() {
  bool failed = result_.status != RunStatus::kPassed;
  if (options_.bring_up_only && !failed && (!emulator_ || emulator_->detach())) {
    // `ernicctl up`: what exists stays; `ernicctl down` finds it by the run token.
    cleanup_.release();
    hosts_.clear();
    result_.left_running = true;
    return;
  }
  bool keep = options_.keep == KeepPolicy::kAlways ||
              (options_.keep == KeepPolicy::kOnFailure && failed && !Interrupt::requested());
  // Hosts' commands are gone with their RunningCommand objects; what is left is the hosts.
  if (keep) {
    for (const auto& what : cleanup_.release()) {
      status_.warning(fmt::format("kept (--keep): {}", what));
    }
    hosts_.clear();
    return;
  }
  if (cleanup_.size() > 0) {
    status_.phase(Interrupt::count() > 1 ? "tearing down (fast)" : "tearing down");
  }
  hosts_.clear();
  cleanup_.run_all([this](const std::string& what, const std::string& error) {
    status_.warning(fmt::format("teardown: {} failed: {}", what, error));
  });
}

}  // namespace ernic
