// The points of a run: for each repetition, the server started and observed ready, the client
// run, both parsed, the sample recorded; and a watchdog that stops the run the moment its
// environment goes away.
#include <fmt/format.h>

#include <condition_variable>
#include <mutex>
#include <stop_token>
#include <thread>

#include "base/interrupt.h"
#include "base/subprocess.h"
#include "base/units.h"
#include "history/statistics.h"
#include "run/executor.h"
#include "run/point_headline.h"
#include "run/step_log.h"
#include "run/sustained.h"

namespace ernic {
namespace {

// How long a server may take to start listening before the point fails.
constexpr auto kServerReadyLimit = std::chrono::seconds(30);
// How long a server may take to exit after its client finished.
constexpr auto kServerExitLimit = std::chrono::seconds(5);
// How long a server that serves until stopped may take to exit after SIGTERM.
constexpr auto kServerStopGrace = std::chrono::seconds(1);
// How often hosts are asked whether they still answer while points run. An SSH host's answer is
// one round trip to its sshd (no process starts on it), so this costs the measurement nothing.
constexpr auto kHostCheckInterval = std::chrono::seconds(1);
constexpr auto kInstanceCheckInterval = std::chrono::milliseconds(250);
// How long after a failed point an instance's death may still be on its way to check_alive.
constexpr auto kDeathSettle = std::chrono::milliseconds(1500);
// How many times a repetition runs again after a failure its tool declared retryable
// (ParseOutcome::retryable_cause: transient, saying nothing about the device).
constexpr int kMaxRetries = 2;

class EnvironmentGone : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

std::string first_line(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

}  // namespace

void Executor::stop_if_environment_gone() {
  if (auto gone = environment_gone(); !gone.empty()) {
    throw EnvironmentGone(fmt::format("stopping: {}", gone));
  }
  if (!emulator_ || !runner_.executes()) {
    return;
  }
  // An instance's death can reach a point's result (its client lost the peer) a moment before
  // it reaches check_alive (the exit status of an instance started over SSH, the lost-peer
  // counter in a stats file written every second). Look again for a moment before calling the
  // failure the tool's: otherwise the run goes on, or ends naming the client, not the instance.
  const auto deadline = Clock::now() + kDeathSettle;
  while (Clock::now() < deadline) {
    std::this_thread::sleep_for(kDeathSettle / 10);
    throw_if_interrupted();
    if (auto dead = runner_.check_alive(*emulator_); !dead.empty()) {
      throw EnvironmentGone(fmt::format("stopping: emulator {}", dead));
    }
  }
}

void Executor::run_points() {
  // A dead emulator instance or a host that stopped answering must stop the run within seconds,
  // also in the middle of a point (a client talking to a frozen server would otherwise wait for
  // the point's timeout): the watchdog wakes every wait the way Ctrl-C does.
  std::jthread watchdog([this](std::stop_token stop) {
    std::mutex mutex;
    std::condition_variable_any wake;
    std::unique_lock lock(mutex);
    auto next_host_check = Clock::now();
    while (!stop.stop_requested()) {
      std::string gone;
      if (emulator_) {
        if (auto dead = runner_.check_alive(*emulator_); !dead.empty()) {
          gone = fmt::format("emulator {}", dead);
        }
      }
      if (gone.empty() && Clock::now() >= next_host_check) {
        gone = environment_gone();
        next_host_check = Clock::now() + kHostCheckInterval;
      }
      if (!gone.empty()) {
        Interrupt::abort(fmt::format("stopping: {}", gone));
        return;
      }
      wake.wait_for(lock, stop, kInstanceCheckInterval, [] { return false; });
    }
  });
  int total = static_cast<int>(plan_.points.size());
  for (std::size_t i = 0; i < plan_.points.size(); ++i) {
    throw_if_interrupted();
    const PlannedPoint& point = plan_.points[i];
    std::vector<int> members = {static_cast<int>(i)};
    if (point.together >= 0) {
      const PlannedStart& start = plan_.together[static_cast<std::size_t>(point.together)];
      if (start.points.front() != static_cast<int>(i)) {
        continue;  // it ran with the first point of its start
      }
      members = start.points;
    }
    auto started = Clock::now();
    const auto traffic_before = emulator_ ? emulator_->traffic() : std::map<int, InstanceTraffic>{};
    run_together(members);
    double duration_s = std::chrono::duration<double>(Clock::now() - started).count();
    const auto traffic_after = emulator_ ? emulator_->traffic() : std::map<int, InstanceTraffic>{};
    throw_if_interrupted();
    bool failed = false;
    for (int index : members) {
      const PlannedPoint& member = plan_.points[static_cast<std::size_t>(index)];
      PointResult& result = result_.points[static_cast<std::size_t>(index)];
      result.duration_s = duration_s;
      for (const auto& [id, after] : traffic_after) {
        const InstanceTraffic before =
            traffic_before.contains(id) ? traffic_before.at(id) : InstanceTraffic{};
        result.instances[id] = {
            after.bytes_sent - std::min(after.bytes_sent, before.bytes_sent),
            after.bytes_received - std::min(after.bytes_received, before.bytes_received)};
      }
      status_.point_finished(index, total, member.id, result.status == PointStatus::kPassed,
                             point_headline(member, result));
      failed = failed || result.status == PointStatus::kFailed;
    }
    if (failed) {
      // A failed point may be the tool's fault or the environment's; only the second stops the run.
      stop_if_environment_gone();
    }
  }
}

void Executor::run_together(const std::vector<int>& members) {
  // Until every repetition passed, a point counts as failed: if the run stops in the middle
  // (Ctrl-C, a dead instance, a host that stopped answering) this is what the record says.
  std::vector<PointRun> runs;
  for (int index : members) {
    PointResult& result = result_.points[static_cast<std::size_t>(index)];
    result.status = PointStatus::kFailed;
    result.reason = "did not finish: the run stopped while it ran";
    runs.push_back({&plan_.points[static_cast<std::size_t>(index)], &result});
  }
  int total = static_cast<int>(plan_.points.size());
  int repetitions = runs.front().point->repetitions;
  for (int repetition = 1; repetition <= repetitions; ++repetition) {
    for (const auto& run : runs) {
      const PlannedPoint& point = *run.point;
      status_.point_started(point.index, total, point.id, repetition, point.repetitions);
      runner_.begin_point(point.id, point.index, total, repetition, point.repetitions,
                          point.entry->timeout);
    }
    if (!run_repetition(runs, repetition)) {
      return;
    }
  }
  for (const auto& run : runs) {
    run.result->status = PointStatus::kPassed;
    run.result->reason.clear();
  }
}

// Notes when each chunk of a client's stdout arrived (for the tool's rung 2 figure), and passes
// everything on to the step log. Called from the command's output thread.
class ArrivalSink final : public OutputSink {
 public:
  ArrivalSink(OutputSink* next, Clock::time_point start) : next_(next), start_(start) {}
  void on_output(OutputStream stream, std::string_view data) override {
    if (stream == OutputStream::kStdout && !data.empty()) {
      double ms = std::chrono::duration<double, std::milli>(Clock::now() - start_).count();
      std::lock_guard lock(mutex_);
      received_ += data.size();
      arrivals_.chunks.push_back({.end = received_, .ms = ms});
    }
    if (next_ != nullptr) {
      next_->on_output(stream, data);
    }
  }
  OutputArrivals arrivals() const {
    std::lock_guard lock(mutex_);
    return arrivals_;
  }

 private:
  OutputSink* next_;
  Clock::time_point start_;
  mutable std::mutex mutex_;
  std::size_t received_ = 0;
  OutputArrivals arrivals_;
};

// One tenant's side of a repetition: its hosts, port, commands, log and what they did.
struct TenantRun {
  const PlannedPoint* point = nullptr;
  PointResult* result = nullptr;
  const Tenant* tenant = nullptr;
  const Benchmark* tool = nullptr;
  int number = 1;        // 1-based
  bool several = false;  // the entry has more than one tenant
  PointContext context;
  PointCommands commands;
  std::unique_ptr<StepLog> log;
  std::unique_ptr<RunningCommand> server;
  std::unique_ptr<ArrivalSink> client_sink;
  std::unique_ptr<RunningCommand> client;
  std::optional<CommandResult> server_result;
  std::optional<CommandResult> client_result;
  std::string failure;  // with its log; empty while it goes well
  // The tool declared the failure retryable: its cause, short (empty for any other failure).
  std::string retryable_cause;

  std::string role(const char* side) const {
    return several ? fmt::format("{} {}", side, tenant->name) : side;
  }
  void fail(const std::string& reason) {
    log->note("point failed: " + reason);
    failure = fmt::format("{} (log: {})", reason, log->path().string());
  }
};

TenantRun Executor::make_tenant_run(const PlannedPoint& point, const Tenant& tenant, int number,
                                    int repetition, PointResult& result, TenantRun* retried) {
  const BenchmarkEntry& entry = *point.entry;
  TenantRun run;
  run.point = &point;
  run.result = &result;
  run.tenant = &tenant;
  run.tool = point.tool;
  run.number = number;
  run.several = entry.multi_tenant();
  PointContext& context = run.context;
  context.benchmark = entry.name;
  context.id = point.id;
  context.params = point.params;
  context.server = tenant.server.empty() ? nullptr : &host(tenant.server);
  context.client = &host(tenant.client);
  context.server_facts = tenant.server.empty() ? HostFacts{} : facts_[tenant.server];
  context.client_facts = facts_[tenant.client];
  std::uint16_t planned = point.ports.empty() ? point.port : point.ports.at(number - 1);
  context.port =
      context.server && !point.port_fixed ? runner_.server_port(*context.server, planned) : planned;
  if (number == 1) {
    result.port = context.server ? context.port : 0;
  }
  context.timeout = entry.timeout;

  std::string log_name = fmt::format("{:03}-{}{}{}.log", point.index + 1, file_safe(point.id),
                                     point.repetitions > 1 ? fmt::format("-r{}", repetition) : "",
                                     run.several ? fmt::format("-t{}", number) : "");
  std::string title =
      fmt::format("point {} repetition {}/{}", point.id, repetition, point.repetitions);
  if (run.several) {
    title += fmt::format(" tenant {} ({} of {}: server {}, client {})", tenant.name, number,
                         entry.tenants.size(), tenant.server, tenant.client);
  }
  if (retried != nullptr) {
    // A retry goes on in the failed attempt's log: the log keeps both.
    run.log = std::move(retried->log);
    run.log->note(title + ", run again");
    return run;
  }
  run.log = std::make_unique<StepLog>(
      runner_.executes() ? result_.run_dir / "steps" / log_name : std::filesystem::path(), title);
  if (runner_.executes()) {
    result.logs.push_back(run.log->path());
  }
  return run;
}

void Executor::start_server(TenantRun& run) {
  run.tool->prepare(run.context);
  run.commands = run.tool->commands(run.context);
  if (!run.commands.server) {
    return;
  }
  if (run.number == 1) {
    run.result->server_command = run.commands.server->spec.display();
  }
  if (run.several) {
    run.result->tenant_commands[run.tenant->name]["server"] = run.commands.server->spec.display();
  }
  run.log->command("server", *run.context.server, run.commands.server->spec);
  run.server = runner_.start(*run.context.server, run.role("server"), run.commands.server->spec,
                             run.log->sink("server"));
}

void Executor::await_server(TenantRun& run) {
  if (!run.server) {
    return;
  }
  // Readiness is observed, never slept for.
  const Readiness& ready = run.commands.server->readiness;
  Host& server_host = *run.context.server;
  auto deadline = Clock::now() + std::min<Clock::duration>(kServerReadyLimit, run.context.timeout);
  while (true) {
    throw_if_interrupted();
    if (ready.listening_port && runner_.is_listening(server_host, *ready.listening_port)) {
      return;
    }
    if (ready.output_line &&
        run.server->wait_for_output(*ready.output_line,
                                    Clock::now() + std::chrono::milliseconds(20))) {
      return;
    }
    if (!runner_.executes()) {
      return;  // nothing runs in a dry run, so nothing becomes ready either
    }
    if (!run.server->running()) {
      CommandResult early = run.server->wait(Clock::now());
      run.log->result("server", early);
      std::string said = first_line(early.err.empty() ? early.out : early.err);
      return run.fail(fmt::format("server exited before it was ready ({}){}{}", early.describe(),
                                  said.empty() ? "" : ": ", said));
    }
    if (Clock::now() >= deadline) {
      return run.fail(fmt::format("server not ready after {}: waited for {}",
                                  format_duration(kServerReadyLimit), ready.description));
    }
    if (!ready.output_line) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
}

void Executor::start_client(TenantRun& run) {
  if (run.number == 1) {
    run.result->client_command = run.commands.client.display();
    run.result->measured_by = run.tool->measured_by(run.context.params, run.context.client_facts);
  }
  if (run.several) {
    run.result->tenant_commands[run.tenant->name]["client"] = run.commands.client.display();
  }
  run.log->command("client", *run.context.client, run.commands.client);
  run.client_sink = std::make_unique<ArrivalSink>(run.log->sink("client"), Clock::now());
  run.client = runner_.start(*run.context.client, run.role("client"), run.commands.client,
                             run.client_sink.get());
}

void Executor::await_client(TenantRun& run) {
  CommandResult client = run.client->wait(Clock::time_point::max());
  run.log->result("client", client);
  if (client.interrupted) {
    throw RunInterrupted();
  }
  if (run.server) {
    run.server_result =
        run.commands.server->serves_until_stopped
            ? run.server->stop(kServerStopGrace)
            : run.server->wait(Clock::now() +
                               (client.ok() ? kServerExitLimit : std::chrono::seconds(0)));
    run.log->result("server", *run.server_result);
  }
  run.client_result = std::move(client);
  run.tool->cleanup(run.context);
}

std::optional<Sample> Executor::parse_tenant(TenantRun& run, int repetition) {
  const CommandResult& client = *run.client_result;
  if (client.timed_out) {
    run.fail(fmt::format("client timed out after {}", format_duration(run.context.timeout)));
    return std::nullopt;
  }
  if (run.client_sink) {
    run.context.client_arrivals = run.client_sink->arrivals();
  }
  ParseOutcome outcome =
      run.tool->parse(run.server_result ? &*run.server_result : nullptr, client, run.context);
  run.result->details = outcome.details;
  if (!outcome.ok) {
    run.fail(outcome.error.empty() ? fmt::format("client {}", client.describe()) : outcome.error);
    run.retryable_cause = outcome.retryable_cause;
    return std::nullopt;
  }
  Sample sample;
  sample.repetition = repetition;
  sample.tool_s = std::chrono::duration<double>(client.duration).count();
  sample.metrics = std::move(outcome.metrics);
  sample.distributions = std::move(outcome.distributions);
  if (is_sustained(run.point->params)) {
    add_sustained_figures(sample);
  }
  run.log->note("point passed");
  return sample;
}

// What the dry run says starts together once every server is ready: "tcp (t1 b1, t2 b2)", or
// for a concurrent group "group 1 (name): starts together: bulk[...] (t1 c1, ...), lat (c4)".
std::string Executor::together_text(const std::vector<PointRun>& points,
                                    const std::vector<TenantRun>& runs) const {
  std::string text;
  for (const auto& point : points) {
    std::string clients;
    for (const auto& run : runs) {
      if (run.result == point.result && run.failure.empty()) {
        clients += fmt::format("{}{}{}", clients.empty() ? "" : ", ",
                               run.several ? run.tenant->name + " " : "", run.tenant->client);
      }
    }
    text += fmt::format("{}{} ({})", text.empty() ? "" : ", ", point.point->id, clients);
  }
  const PlannedPoint& first = *points.front().point;
  if (first.together >= 0) {
    const PlannedStart& start = plan_.together[static_cast<std::size_t>(first.together)];
    return fmt::format("group {} ({}): starts together: {}", start.group, start.name, text);
  }
  return "starts together: " + text;
}

namespace {

// The cause of an attempt's failure when every run that failed declared it retryable (the first
// run's); empty when none failed or one failure is not retryable: that one is the result.
std::string retryable_cause(const std::vector<TenantRun>& runs) {
  std::string cause;
  for (const auto& run : runs) {
    if (run.failure.empty()) {
      continue;
    }
    if (run.retryable_cause.empty()) {
      return "";
    }
    if (cause.empty()) {
      cause = run.retryable_cause;
    }
  }
  return cause;
}

std::string attempt_failures(const std::vector<TenantRun>& runs) {
  std::string text;
  for (const auto& run : runs) {
    if (!run.failure.empty()) {
      text +=
          fmt::format("{}{}{}", text.empty() ? "" : "; ",
                      run.several ? fmt::format("tenant {}: ", run.tenant->name) : "", run.failure);
    }
  }
  return text;
}

// The attempt of a repetition whose figures count: its runs, and each run's sample (nullopt when
// it failed); `retries` says why the earlier attempts failed.
struct FinalAttempt {
  int repetition = 1;
  std::vector<TenantRun>& runs;
  std::vector<std::optional<Sample>>& samples;
  const std::vector<std::string>& retries;
  bool warm = false;
  Clock::time_point started;
};

// Records the attempt's samples and each point's failure; false when any run failed.
bool record_attempt(const std::vector<PointRun>& points, const FinalAttempt& attempt,
                    bool& first_sample) {
  std::vector<TenantRun>& runs = attempt.runs;
  const std::vector<std::string>& retries = attempt.retries;
  bool all_passed = true;
  for (const auto& point : points) {
    std::vector<std::string> failures;
    for (std::size_t i = 0; i < runs.size(); ++i) {
      TenantRun& run = runs[i];
      if (run.result != point.result) {
        continue;
      }
      std::optional<Sample>& sample = attempt.samples[i];
      if (!sample) {
        failures.push_back(run.several ? fmt::format("tenant {}: {}", run.tenant->name, run.failure)
                                       : run.failure);
        if (!run.several) {
          break;
        }
        sample.emplace();
        sample->repetition = attempt.repetition;
        sample->failure = run.failure;
      }
      sample->warm = attempt.warm;
      sample->duration_s = std::chrono::duration<double>(Clock::now() - attempt.started).count();
      sample->retries = retries;
      if (run.several) {
        sample->tenant = run.number;
        sample->tenant_name = run.tenant->name;
      }
      if (sample->failure.empty()) {
        first_sample = false;
      }
      point.result->samples.push_back(std::move(*sample));
    }
    if (!failures.empty()) {
      point.result->reason.clear();
      for (const auto& failure : failures) {
        point.result->reason += (point.result->reason.empty() ? "" : "; ") + failure;
      }
      if (!retries.empty()) {
        point.result->reason += fmt::format(" (after {} {})", retries.size(),
                                            retries.size() == 1 ? "retry" : "retries");
      }
      all_passed = false;
    }
  }
  return all_passed;
}

}  // namespace

bool Executor::run_repetition(const std::vector<PointRun>& points, int repetition) {
  std::vector<std::vector<Tenant>> tenants;
  for (const auto& point : points) {
    tenants.push_back(point.point->entry->all_tenants());
  }
  std::vector<std::string> retries;  // why each earlier attempt failed, oldest first
  std::vector<TenantRun> runs;
  for (int attempt = 0;; ++attempt) {
    std::vector<TenantRun> previous = std::move(runs);
    runs.clear();
    for (std::size_t p = 0; p < points.size(); ++p) {
      for (std::size_t t = 0; t < tenants[p].size(); ++t) {
        TenantRun* retried = previous.empty() ? nullptr : &previous[runs.size()];
        runs.push_back(make_tenant_run(*points[p].point, tenants[p][t], static_cast<int>(t) + 1,
                                       repetition, *points[p].result, retried));
      }
    }
    previous.clear();
    auto started = Clock::now();
    auto each_tenant = [&](auto step) {
      for (auto& run : runs) {
        if (!run.failure.empty()) {
          continue;
        }
        try {
          step(run);
        } catch (const SpawnError& e) {
          run.tool->cleanup(run.context);
          run.fail(e.what());
        }
      }
    };
    // Every tenant's server started and observed ready before any client starts; then the
    // clients are released together, back to back, and each is awaited and parsed on its own.
    each_tenant([&](TenantRun& run) { start_server(run); });
    each_tenant([&](TenantRun& run) { await_server(run); });
    if (runs.size() > 1) {
      runner_.starts_together(together_text(points, runs));
    }
    each_tenant([&](TenantRun& run) { start_client(run); });
    each_tenant([&](TenantRun& run) { await_client(run); });
    if (!runner_.executes()) {
      return true;
    }
    bool warm = !first_sample_;
    std::vector<std::optional<Sample>> samples;
    for (auto& run : runs) {
      samples.push_back(run.failure.empty() ? parse_tenant(run, repetition) : std::nullopt);
    }
    std::string cause = retryable_cause(runs);
    if (cause.empty() || attempt == kMaxRetries) {
      return record_attempt(points, {repetition, runs, samples, retries, warm, started},
                            first_sample_);
    }
    throw_if_interrupted();
    retries.push_back(attempt_failures(runs));
    std::string retrying =
        fmt::format("retrying: {} (retry {} of at most {})", cause, attempt + 1, kMaxRetries);
    for (auto& run : runs) {
      run.log->note(retrying);
    }
    const PlannedPoint& first = *points.front().point;
    status_.warning(
        fmt::format("{} repetition {}/{}: {}", first.id, repetition, first.repetitions, retrying));
  }
}

}  // namespace ernic
