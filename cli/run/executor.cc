// The run-level walk: instances, hosts, setup, then the points (point_execution.cc), then
// teardown. Every effect goes through the CommandRunner.
#include "run/executor.h"

#include <fmt/format.h>

#include <fstream>
#include <set>

#include "base/durable_file.h"
#include "base/interrupt.h"
#include "emulators/attached_instances.h"
#include "hosts/local_host.h"
#include "hosts/provider.h"
#include "run/leftovers.h"
#include "run/step_log.h"
#include "setup/setup_step.h"

namespace ernic {
namespace {

// The end of "PROGRAM is not installed ...": the package to install, and what does without it.
std::string how_to_do_without(const Benchmark::Program& program) {
  std::string text = fmt::format("install the Debian package {}", program.debian_package);
  return program.instead.empty() ? text : fmt::format("{}, {}", text, program.instead);
}

// The hosts of the scenario grouped by provider, providers in the order the scenario first
// names them (the order the run creates them in).
std::vector<std::pair<std::string, std::vector<HostSpec>>> hosts_by_provider(
    const Scenario& scenario) {
  std::vector<std::pair<std::string, std::vector<HostSpec>>> groups;
  for (const auto& spec : scenario.hosts) {
    auto group = std::find_if(groups.begin(), groups.end(),
                              [&](const auto& g) { return g.first == spec.provider; });
    if (group == groups.end()) {
      groups.emplace_back(spec.provider, std::vector<HostSpec>{});
      group = std::prev(groups.end());
    }
    group->second.push_back(spec);
  }
  return groups;
}

// The hosts emulator instances run on (`on: HOST`).
std::vector<std::string> placement_hosts(const Platform& platform, const Scenario& scenario) {
  EmulatorKind* kind = platform.emulator_kind(scenario.emulator.kind);
  return kind != nullptr ? kind->placement_hosts(scenario.emulator.config)
                         : std::vector<std::string>{};
}

}  // namespace

void throw_if_interrupted() {
  if (Interrupt::requested()) {
    throw RunInterrupted();
  }
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

Executor::Executor(const Plan& plan, const Platform& platform, CommandRunner& runner,
                   RunOptions options, Status& status)
    : plan_(plan),
      platform_(platform),
      runner_(runner),
      options_(std::move(options)),
      status_(status),
      run_token_(runner.run_token()) {}

Host& Executor::host(const std::string& name) {
  for (auto& host : hosts_) {
    if (host->name() == name) {
      return *host;
    }
  }
  throw std::logic_error("unknown host " + name);
}

EmulatorContext Executor::emulator_context() {
  return EmulatorContext{
      .run_dir = result_.run_dir,
      .run_token = run_token_,
      .cleanup = &cleanup_,
      .bring_up = options_.bring_up_only,
      .host = [this](const std::string& name) -> Host* {
        for (auto& created : hosts_) {
          if (created->name() == name) {
            return created.get();
          }
        }
        return nullptr;
      },
      .guest_instances = guest_region_instances(platform_, plan_.scenario->hosts)};
}

RunResult Executor::run() {
  const Scenario& scenario = *plan_.scenario;
  result_.started = std::chrono::system_clock::now();
  result_.run_token = run_token_;
  result_.selection = plan_.selection;
  for (const auto& point : plan_.points) {
    PointResult pending;
    pending.point = &point;
    pending.reason = "not run";
    result_.points.push_back(std::move(pending));
  }
  preflight();  // throws PreflightError before anything exists
  check_attachment();
  first_sample_ = options_.attach == nullptr;
  // Held while this process lives: `ernicctl down` leaves a live run's resources alone.
  std::optional<RunLock> lock;
  if (runner_.executes()) {
    lock.emplace(run_token_);
  }
  result_.run_dir = runner_.make_run_dir(options_.runs_dir, scenario.name, result_.run_name);
  if (runner_.executes()) {
    // A copy for a person to read: a full run directory must not stop the run.
    if (auto reason =
            write_file_durably_or_reason(result_.run_dir / "scenario.yaml", scenario.resolved_yaml);
        !reason.empty()) {
      status_.warning(reason);
    }
  }
  try {
    throw_if_interrupted();
    if (options_.attach) {
      attach_emulator();
      attach_hosts();
    } else {
      create_hosts(/*placement_groups=*/true);
      start_emulator();
      throw_if_interrupted();
      create_hosts(/*placement_groups=*/false);
      attach_hosts_to_instances();
    }
    check_programs();
    throw_if_interrupted();
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
  settle_status();
  if (emulator_) {
    result_.emulator = emulator_->record();
    result_.instances = emulator_->manifest();
  } else {
    result_.emulator = {{"kind", scenario.emulator.kind}};
  }
  teardown();
  // A signal that arrived while tearing down still makes the run interrupted: what finished is
  // in the record, but it is not a run that passed.
  settle_status();
  result_.finished = std::chrono::system_clock::now();
  return std::move(result_);
}

void Executor::settle_status() {
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
}

void Executor::preflight() {
  if (!runner_.executes()) {
    return;
  }
  // Programs that run from this machine's filesystem (local and netns hosts, and what their
  // providers need) are checked before anything is created; remote hosts are checked as soon as
  // they answer. Hosts attached to an emulator instance get that instance's facts (a load
  // generator endpoint needs no perftest).
  std::map<std::string, std::set<std::string>> missing;  // program -> hosts
  std::map<std::string, Benchmark::Program> programs;
  auto need = [&](const Benchmark::Program& program, const std::string& host_name) {
    if (!program_in_path(program.name)) {
      missing[program.name].insert(host_name);
      programs[program.name] = program;
    }
  };
  EmulatorKind* kind = platform_.emulator_kind(plan_.scenario->emulator.kind);
  EmulatorContext context = emulator_context();
  for (const auto& spec : plan_.scenario->hosts) {
    HostProvider* provider = platform_.provider(spec.provider);
    if (!provider->shares_this_filesystem()) {
      continue;
    }
    for (const auto& program : provider->programs()) {
      need(program, spec.name);
    }
    HostFacts facts;
    if (kind != nullptr && spec.config.has("instance")) {
      facts = kind->planned_facts(plan_.scenario->emulator.config, context,
                                  static_cast<int>(spec.config.integer("instance", 0)));
    }
    for (const auto& point : plan_.points) {
      for (const auto& tenant : point.entry->all_tenants()) {
        if (tenant.server == spec.name || tenant.client == spec.name) {
          for (const auto& program : point.tool->programs_for(facts, point.params)) {
            need(program, spec.name);
          }
        }
      }
    }
  }
  for (const HostProvider* provider : platform_.providers) {
    std::vector<HostSpec> mine;
    for (const auto& spec : plan_.scenario->hosts) {
      if (spec.provider == provider->name()) {
        mine.push_back(spec);
      }
    }
    if (!mine.empty()) {
      try {
        provider->check_machines(mine, plan_.scenario->settings);
      } catch (const std::runtime_error& error) {
        throw PreflightError(error.what());
      }
    }
  }
  if (!missing.empty()) {
    std::string message;
    for (const auto& [program, hosts] : missing) {
      std::string names;
      for (const auto& name : hosts) {
        names += (names.empty() ? "" : ", ") + name;
      }
      message +=
          fmt::format("{}{} is not installed (needed on {}); {}", message.empty() ? "" : "\n",
                      program, names, how_to_do_without(programs[program]));
    }
    throw PreflightError(message);
  }
}

void Executor::check_attachment() {
  if (options_.attach == nullptr) {
    return;
  }
  const Attachment& attachment = *options_.attach;
  if (std::string mismatch = attachment_mismatch(*plan_.scenario, attachment); !mismatch.empty()) {
    throw PreflightError(fmt::format("cannot attach: {}", mismatch));
  }
  result_.attached_to = AttachedTo{.up_run_dir = attachment.up_run_dir,
                                   .up_run_token = attachment.up_run_token,
                                   .up_since = attachment.up_since,
                                   .rebuilt = {}};
}

void Executor::attach_emulator() {
  const EmulatorSettings& settings = plan_.scenario->emulator;
  EmulatorKind* kind = platform_.emulator_kind(settings.kind);
  if (kind == nullptr || options_.attach->instances.empty()) {
    return;
  }
  status_.phase(fmt::format("attaching to {} emulator instances ({}) of run {}",
                            options_.attach->instances.size(), settings.kind,
                            options_.attach->up_run_token));
  EmulatorContext context = emulator_context();
  const std::vector<ManifestInstance>& instances = options_.attach->instances;
  emulator_ = runner_.attach_emulator(*kind, instances, context);
  // A dead instance fails the run here, before any point, naming it.
  if (std::string dead = runner_.check_alive(*emulator_); !dead.empty()) {
    throw std::runtime_error(fmt::format("emulator {}", dead));
  }
  if (runner_.executes()) {
    for (const auto& rebuilt : rebuilt_instance_programs(instances)) {
      status_.warning(
          fmt::format("{}: these results measure the program as it was; "
                      "`ernicctl up --restart-instances` runs the rebuilt one",
                      rebuilt));
      result_.attached_to->rebuilt.push_back(rebuilt);
    }
  }
}

void Executor::attach_hosts() {
  const Scenario& scenario = *plan_.scenario;
  for (const auto& [provider_name, specs] : hosts_by_provider(scenario)) {
    HostProvider* provider = platform_.provider(provider_name);
    status_.phase(fmt::format("attaching to {} {} host{}", specs.size(), provider_name,
                              specs.size() == 1 ? "" : "s"));
    std::vector<AttachedHost> recorded;
    for (const auto& spec : specs) {
      recorded.push_back(*options_.attach->find_host(spec.name));
    }
    ProviderContext context{.run_dir = result_.run_dir,
                            .run_token = options_.attach->up_run_token,
                            .scenario = scenario.settings,
                            .cleanup = &cleanup_,
                            .status = &status_,
                            .runner = &runner_};
    auto attached = runner_.attach_hosts(*provider, specs, recorded, context);
    for (std::size_t i = 0; i < attached.size(); ++i) {
      // The facts up recorded hold what the host, its instance and setup gave then.
      facts_[attached[i]->name()] = recorded[i].facts;
      result_.hosts.push_back(HostRecord{.name = attached[i]->name(),
                                         .provider = provider_name,
                                         .address = attached[i]->address(),
                                         .t_init_s = 0,
                                         .facts = {},
                                         .attached = true});
      hosts_.push_back(std::move(attached[i]));
    }
  }
}

void Executor::start_emulator() {
  const EmulatorSettings& settings = plan_.scenario->emulator;
  EmulatorKind* kind = platform_.emulator_kind(settings.kind);
  if (kind == nullptr || kind->instance_count(settings.config) == 0) {
    return;
  }
  status_.phase(fmt::format("starting {} emulator instances ({})",
                            kind->instance_count(settings.config), settings.kind));
  EmulatorContext context = emulator_context();
  emulator_ = runner_.start_emulator(*kind, settings.config, context);
}

void Executor::attach_hosts_to_instances() {
  for (const auto& spec : plan_.scenario->hosts) {
    if (!spec.config.has("instance")) {
      continue;
    }
    int instance = static_cast<int>(spec.config.integer("instance", 0));
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

void Executor::create_hosts(bool placement_groups) {
  const Scenario& scenario = *plan_.scenario;
  const std::vector<std::string> placed_on = placement_hosts(platform_, scenario);
  for (const auto& [provider_name, specs] : hosts_by_provider(scenario)) {
    bool holds_placement = std::any_of(specs.begin(), specs.end(), [&](const HostSpec& spec) {
      return std::find(placed_on.begin(), placed_on.end(), spec.name) != placed_on.end();
    });
    if (holds_placement != placement_groups) {
      continue;
    }
    HostProvider* provider = platform_.provider(provider_name);
    status_.phase(fmt::format("creating {} {} host{}", specs.size(), provider_name,
                              specs.size() == 1 ? "" : "s"));
    ProviderContext context{.run_dir = result_.run_dir,
                            .run_token = run_token_,
                            .scenario = scenario.settings,
                            .cleanup = &cleanup_,
                            .status = &status_,
                            .runner = &runner_};
    auto started = Clock::now();
    auto created = runner_.create_hosts(*provider, specs, context);
    double t_init = std::chrono::duration<double>(Clock::now() - started).count();
    for (auto& host : created) {
      HostFacts platform = host->platform_facts();
      // A guest measures its own T_init (domain start to verified SSH); others take the
      // provider's time for all of its hosts.
      double own_t_init = t_init;
      if (auto it = platform.find("t_init_s"); it != platform.end()) {
        own_t_init = std::strtod(it->second.c_str(), nullptr);
      }
      facts_[host->name()].insert(platform.begin(), platform.end());
      result_.hosts.push_back(HostRecord{.name = host->name(),
                                         .provider = provider_name,
                                         .address = host->address(),
                                         .t_init_s = own_t_init,
                                         .facts = {}});
      hosts_.push_back(std::move(host));
    }
  }
}

void Executor::check_programs() {
  // Hosts not on this machine's filesystem are checked as soon as they answer, and every host
  // with the facts it now has (an emulator endpoint needs no perftest).
  std::set<std::string> checked;
  std::vector<std::string> point_hosts;
  for (const auto& point : plan_.points) {
    point_hosts.clear();
    for (const auto& tenant : point.entry->all_tenants()) {
      point_hosts.insert(point_hosts.end(), {tenant.server, tenant.client});
    }
    for (const std::string& host_name : point_hosts) {
      if (host_name.empty()) {
        continue;
      }
      for (const auto& program : point.tool->programs_for(facts_[host_name], point.params)) {
        if (!checked.insert(host_name + "/" + program.name).second) {
          continue;
        }
        Host& h = host(host_name);
        if (!h.has_program(program.name)) {
          throw std::runtime_error(fmt::format("{} is not installed on {}; {}", program.name,
                                               h.describe(), how_to_do_without(program)));
        }
      }
    }
  }
}

std::vector<SetupEntry> Executor::setup_entries() const {
  // A guest served through a guest region sees its instance's device only once the device is
  // described inside it: before anything of the scenario's, which may look for it.
  SetupEntry device{.step = "instance-device", .hosts = {}, .config = Config()};
  for (const auto& spec : plan_.scenario->hosts) {
    if (auto facts = facts_.find(spec.name);
        facts != facts_.end() && !host_fact(facts->second, "guest_region").empty()) {
      device.hosts.push_back(spec.name);
    }
  }
  std::vector<SetupEntry> entries;
  if (!device.hosts.empty()) {
    entries.push_back(std::move(device));
  }
  entries.insert(entries.end(), plan_.scenario->setup.begin(), plan_.scenario->setup.end());
  return entries;
}

void Executor::apply_setup() {
  int index = 0;
  for (const auto& entry : setup_entries()) {
    const SetupStep* step = platform_.setup_step(entry.step);
    for (const auto& host_name : entry.hosts) {
      throw_if_interrupted();
      Host& h = host(host_name);
      status_.phase(fmt::format("setup: {} on {}", entry.step, host_name));
      StepLog log(runner_.executes() ? result_.run_dir / "steps" /
                                           fmt::format("setup-{:02}-{}-{}.log", ++index, entry.step,
                                                       file_safe(host_name))
                                     : std::filesystem::path(),
                  fmt::format("setup step {} on {}", entry.step, h.describe()));
      try {
        runner_.apply_setup(*step, entry, h, facts_[host_name], log.sink("setup"));
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
  std::set<std::string_view> seen;
  for (const auto& point : plan_.points) {
    auto probe = point.tool->version_command();
    if (!probe || !seen.insert(point.tool->tool()).second) {
      continue;
    }
    try {
      auto command = runner_.start(host(point.entry->client), "version probe", *probe, nullptr);
      CommandResult result = command->wait(Clock::now() + probe->timeout);
      if (runner_.executes()) {
        if (auto version = point.tool->parse_version(result); !version.empty()) {
          result_.tool_versions[std::string(point.tool->tool())] = version;
        }
      }
    } catch (const std::exception&) {
      // A version we cannot read is recorded as unknown, not a failed run.
    }
  }
}

std::string Executor::environment_gone() {
  if (emulator_) {
    if (auto dead = runner_.check_alive(*emulator_); !dead.empty()) {
      return fmt::format("emulator {}", dead);
    }
  }
  for (auto& h : hosts_) {
    if (auto reason = runner_.check_alive(*h); !reason.empty()) {
      return reason;
    }
  }
  return "";
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
  // Hosts that emulator instances run on stay until the instances are stopped and their stats
  // copied, which their teardown does through those hosts.
  const std::vector<std::string> placed_on = placement_hosts(platform_, *plan_.scenario);
  std::erase_if(hosts_, [&](const std::unique_ptr<Host>& h) {
    return std::find(placed_on.begin(), placed_on.end(), h->name()) == placed_on.end();
  });
  runner_.tear_down(cleanup_, [this](const std::string& what, const std::string& error) {
    status_.warning(fmt::format("teardown: {} failed: {}", what, error));
  });
  hosts_.clear();
}

}  // namespace ernic
