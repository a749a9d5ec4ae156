// The points of a run: for each repetition, the server started and observed ready, the client
// run, both parsed, the sample recorded; and a watchdog that stops the run the moment its
// environment goes away.
#include <fmt/format.h>

#include <condition_variable>
#include <mutex>
#include <stop_token>
#include <thread>

#include "common/interrupt.h"
#include "common/subprocess.h"
#include "common/units.h"
#include "run/executor.h"
#include "run/step_log.h"

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

class EnvironmentGone : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

void check_interrupt() {
  if (Interrupt::requested()) {
    throw RunInterrupted();
  }
}

std::string first_line(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

std::string headline_of(const PlannedPoint& point, const PointResult& result) {
  if (result.status != PointStatus::kPassed || result.samples.empty()) {
    return result.reason;
  }
  std::string headline = point.tool->headline_metric(point.params);
  for (const auto& metric : point.tool->metrics()) {
    auto it = result.samples.back().metrics.find(metric.name);
    if (metric.name == headline && it != result.samples.back().metrics.end()) {
      return fmt::format("{} {:.4g} {}", metric.name, it->second, metric.unit);
    }
  }
  return "";
}

}  // namespace

void Executor::stop_if_environment_gone() {
  if (auto gone = environment_gone(); !gone.empty()) {
    throw EnvironmentGone(fmt::format("stopping: {}", gone));
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
    check_interrupt();
    const PlannedPoint& point = plan_.points[i];
    PointResult& result = result_.points[i];
    auto started = Clock::now();
    run_point(point, result);
    result.duration_s = std::chrono::duration<double>(Clock::now() - started).count();
    check_interrupt();
    status_.point_finished(static_cast<int>(i), total, point.id,
                           result.status == PointStatus::kPassed, headline_of(point, result));
    if (result.status == PointStatus::kFailed) {
      // A failed point may be the tool's fault or the environment's; only the second stops the run.
      stop_if_environment_gone();
    }
  }
}

void Executor::run_point(const PlannedPoint& point, PointResult& result) {
  // Until every repetition passed, the point counts as failed: if the run stops in the middle
  // (Ctrl-C, a dead instance, a host that stopped answering) this is what the record says.
  result.status = PointStatus::kFailed;
  result.reason = "did not finish: the run stopped while it ran";
  for (int repetition = 1; repetition <= point.repetitions; ++repetition) {
    status_.point_started(point.index, static_cast<int>(plan_.points.size()), point.id, repetition,
                          point.repetitions);
    runner_.begin_point(point.id, point.index, static_cast<int>(plan_.points.size()), repetition,
                        point.repetitions, point.entry->timeout);
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
  context.port = context.server && !point.port_fixed
                     ? runner_.server_port(*context.server, point.port)
                     : point.port;
  result.port = context.server ? context.port : 0;
  context.timeout = entry.timeout;

  std::string log_name = fmt::format("{:03}-{}{}.log", point.index + 1, file_safe(point.id),
                                     point.repetitions > 1 ? fmt::format("-r{}", repetition) : "");
  StepLog log(runner_.executes() ? result_.run_dir / "steps" / log_name : std::filesystem::path(),
              fmt::format("point {} repetition {}/{}", point.id, repetition, point.repetitions));
  if (runner_.executes()) {
    result.logs.push_back(log.path());
  }
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
      server = runner_.start(*context.server, "server", commands.server->spec, log.sink("server"));
      // Readiness is observed, never slept for.
      const Readiness& ready = commands.server->readiness;
      auto deadline = Clock::now() + std::min<Clock::duration>(kServerReadyLimit, entry.timeout);
      bool is_ready = false;
      while (!is_ready) {
        check_interrupt();
        if (ready.listening_port && runner_.is_listening(*context.server, *ready.listening_port)) {
          is_ready = true;
        } else if (ready.output_line &&
                   server->wait_for_output(*ready.output_line,
                                           Clock::now() + std::chrono::milliseconds(20))) {
          is_ready = true;
        } else if (!runner_.executes()) {
          is_ready = true;  // nothing runs in a dry run, so nothing becomes ready either
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
    CommandResult client =
        runner_.start(*context.client, "client", commands.client, log.sink("client"))
            ->wait(Clock::time_point::max());
    log.result("client", client);
    if (client.interrupted) {
      throw RunInterrupted();
    }
    if (server) {
      server_result = commands.server->serves_until_stopped
                          ? server->stop(kServerStopGrace)
                          : server->wait(Clock::now() + (client.ok() ? kServerExitLimit
                                                                     : std::chrono::seconds(0)));
      log.result("server", *server_result);
    }
    point.tool->cleanup(context);
    if (!runner_.executes()) {
      return true;
    }
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

}  // namespace ernic
