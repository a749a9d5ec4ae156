#include "run/testing/fake_platform.h"

#include <algorithm>
#include <thread>

#include <fmt/format.h>
#include <poll.h>

#include "base/interrupt.h"
#include "builtin_platform.h"

namespace ernic::testing {
namespace {

class FakeCommand final : public RunningCommand {
 public:
  FakeCommand(Scripted script, std::chrono::milliseconds timeout, OutputSink* sink)
      : script_(std::move(script)),
        own_deadline_(timeout.count() > 0 ? Clock::now() + timeout : Clock::time_point::max()),
        sink_(sink) {}
  bool wait_for_output(const std::regex&, Clock::time_point) override {
    return !script_.exits_early;
  }
  bool running() override { return !done_ && !script_.exits_early; }
  CommandResult wait(Clock::time_point deadline) override {
    if (done_ || !script_.hangs) {
      return finish();
    }
    // Runs until its deadline or an interrupt, as a real process would.
    deadline = std::min(deadline, own_deadline_);
    while (Clock::now() < deadline) {
      if (Interrupt::requested()) {
        CommandResult result = finish();
        result.interrupted = true;
        return result;
      }
      pollfd wake{.fd = Interrupt::wake_fd(), .events = POLLIN, .revents = 0};
      ::poll(&wake, 1, 5);
    }
    CommandResult result = finish();
    result.timed_out = true;
    return result;
  }
  CommandResult stop(std::chrono::milliseconds) override {
    CommandResult result = finish();
    if (script_.hangs) {
      result.term_signal = 15;
    }
    return result;
  }

 private:
  CommandResult finish() {
    for (const auto& [after, text] : script_.timed_stdout) {
      std::this_thread::sleep_until(started_ + after);  // the tool's pace, not a readiness wait
      if (sink_ != nullptr) {
        sink_->on_output(OutputStream::kStdout, text);
      }
    }
    script_.timed_stdout.clear();
    if (script_.logs_result && !done_ && sink_ != nullptr) {
      sink_->on_output(OutputStream::kStdout, script_.result.out);
      sink_->on_output(OutputStream::kStderr, script_.result.err);
    }
    done_ = true;
    return script_.result;
  }
  Scripted script_;
  Clock::time_point own_deadline_;
  OutputSink* sink_;
  Clock::time_point started_ = Clock::now();
  bool done_ = false;
};

class FakeRunningEmulator final : public RunningEmulator {
 public:
  FakeRunningEmulator(const FakeEmulatorKind& kind, std::vector<HostFacts> facts)
      : kind_(kind), facts_(std::move(facts)) {}
  std::string check_alive() override {
    return std::chrono::steady_clock::now() >= kind_.dead_from.load() ? kind_.dead : "";
  }
  int instance_count() const override { return static_cast<int>(facts_.size()); }
  HostFacts facts_for(int instance) const override { return facts_.at(instance - 1); }
  nlohmann::json record() const override { return {{"kind", kind_.name()}}; }
  InstanceManifest manifest() const override { return {}; }

 private:
  const FakeEmulatorKind& kind_;
  std::vector<HostFacts> facts_;
};

}  // namespace

void World::log(std::string event) {
  std::lock_guard lock(mutex_);
  events_.push_back(std::move(event));
}

std::vector<std::string> World::events() const {
  std::lock_guard lock(mutex_);
  return events_;
}

std::vector<std::string> World::events_starting(const std::string& prefix) const {
  std::vector<std::string> matching;
  for (const auto& event : events()) {
    if (event.rfind(prefix, 0) == 0) {
      matching.push_back(event);
    }
  }
  return matching;
}

std::unique_ptr<RunningCommand> FakeHost::start(const CommandSpec& spec, OutputSink* sink) {
  world_.log(fmt::format("run on {}: {}", name_, spec.display()));
  Scripted script = world_.script(name_, spec);
  if (script.on_start) {
    script.on_start();
  }
  if (script.result.out.empty()) {
    for (const auto& chunk : script.timed_stdout) {
      script.result.out += chunk.second;
    }
  }
  server_ = script;
  server_polls_ = 0;
  return std::make_unique<FakeCommand>(std::move(script), spec.timeout, sink);
}

bool FakeHost::is_listening(std::uint16_t port) {
  ++world_.polls[name_];
  bool listening =
      server_.listens && !server_.exits_early && server_polls_++ >= server_.polls_to_ready;
  if (listening) {
    world_.log(fmt::format("listening on {}:{}", name_, port));
  }
  return listening;
}

std::vector<std::string> FakeProvider::planned_addresses(const std::vector<HostSpec>& hosts,
                                                         const Config&) const {
  std::vector<std::string> addresses;
  for (const auto& host : hosts) {
    addresses.push_back("addr-" + host.name);
  }
  return addresses;
}

std::vector<std::unique_ptr<Host>> FakeProvider::create(const std::vector<HostSpec>& hosts,
                                                        ProviderContext& context) {
  std::vector<std::unique_ptr<Host>> created;
  auto addresses = planned_addresses(hosts, context.scenario);
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    if (fail_after == static_cast<int>(i)) {
      throw std::runtime_error(fmt::format("{} could not create {}", name(), hosts[i].name));
    }
    context.runner->run_here(CommandSpec{
        .argv = {"true", "link", hosts[i].name}, .timeout = std::chrono::seconds(5), .env = {}});
    world_.log(fmt::format("create {} {}", name(), hosts[i].name));
    context.cleanup->push(fmt::format("remove {} host {}", name(), hosts[i].name),
                          [this, host = hosts[i].name] {
                            world_.log("remove " + host);
                            if (on_remove) {
                              on_remove();
                            }
                          });
    created.push_back(std::make_unique<FakeHost>(world_, hosts[i].name, addresses[i]));
  }
  return created;
}

std::vector<std::unique_ptr<Host>> FakeProvider::attach(const std::vector<HostSpec>& hosts,
                                                        const std::vector<AttachedHost>& recorded,
                                                        ProviderContext& /*context*/) {
  std::vector<std::unique_ptr<Host>> attached;
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    if (std::find(gone.begin(), gone.end(), hosts[i].name) != gone.end()) {
      throw std::runtime_error(fmt::format("host {} is gone", hosts[i].name));
    }
    world_.log(fmt::format("attach {} {}", name(), hosts[i].name));
    attached.push_back(std::make_unique<FakeHost>(world_, hosts[i].name, recorded[i].address));
  }
  return attached;
}

std::vector<std::string> FakeEmulatorKind::describe(const Config& config,
                                                    const EmulatorContext& context) const {
  std::vector<std::string> lines;
  for (int id = 1; id <= instance_count(config); ++id) {
    lines.push_back(planned_facts(config, context, id).at("perf_socket"));
  }
  return lines;
}

HostFacts FakeEmulatorKind::planned_facts(const Config&, const EmulatorContext& context,
                                          int instance) const {
  return {
      {"perf_socket", fmt::format("/tmp/fake-{}/ernic{}.sock", context.run_token, instance)},
      {"ernicctl", "/opt/ernicctl"},
      {"emulator_instance", std::to_string(instance)},
      {"emulator_role", instance == 1 ? "manager" : "worker"},
      {"emulator_gids", "fe80::1,192.168.200.10"},
      {"emulator_mac", "02:e7:00:00:00:01"},
      {"verbs_device", fmt::format("ernic_{}", instance)},
      {"verbs_sysfs", fmt::format("/tmp/fake-{}/ernic{}-verbs-sysfs", context.run_token, instance)},
      {"verbs_library_dir", "/opt/lib/ernicctl"}};
}

std::unique_ptr<RunningEmulator> FakeEmulatorKind::start(const Config& config,
                                                         EmulatorContext& context) {
  std::vector<HostFacts> facts;
  for (int id = 1; id <= instance_count(config); ++id) {
    world_.log(fmt::format("start instance {}", id));
    facts.push_back(planned_facts(config, context, id));
  }
  context.cleanup->push("stop the fake instances", [this] { world_.log("stop instances"); });
  return std::make_unique<FakeRunningEmulator>(*this, std::move(facts));
}

std::unique_ptr<RunningEmulator> FakeEmulatorKind::attach(
    const std::vector<ManifestInstance>& instances, EmulatorContext& /*context*/) {
  world_.log(fmt::format("attach {} instances", instances.size()));
  return std::make_unique<FakeRunningEmulator>(*this, std::vector<HostFacts>{});
}

FakePlatform::FakePlatform(World& world) {
  const Platform builtin = builtin_platform();
  platform.setup_steps = builtin.setup_steps;
  platform.tools = builtin.tools;
  for (HostProvider* real : builtin.providers) {
    providers.push_back(std::make_unique<FakeProvider>(world, *real));
    platform.providers.push_back(providers.back().get());
  }
  for (EmulatorKind* real : builtin.emulator_kinds) {
    if (real->name() == "none") {
      platform.emulator_kinds.push_back(real);  // `none` starts nothing: the real one will do
      continue;
    }
    kinds.push_back(std::make_unique<FakeEmulatorKind>(world, *real));
    platform.emulator_kinds.push_back(kinds.back().get());
  }
}

FakeProvider& FakePlatform::provider(const std::string& name) {
  for (auto& provider : providers) {
    if (provider->name() == name) {
      return *provider;
    }
  }
  throw std::out_of_range(name);
}

FakeEmulatorKind& FakePlatform::kind(const std::string& name) {
  for (auto& kind : kinds) {
    if (kind->name() == name) {
      return *kind;
    }
  }
  throw std::out_of_range(name);
}

}  // namespace ernic::testing
