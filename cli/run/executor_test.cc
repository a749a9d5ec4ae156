// The executor driven in-process by a platform of fakes: no root, no processes but `true`.
#include <fmt/format.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>

#include "base/interrupt.h"
#include "run/executor.h"
#include "run/testing/fake_platform.h"
#include "run/testing/run_harness.h"
#include "samples.h"
#include "scenario/scenario_loader.h"

namespace ernic {
namespace {

using testing::FakePlatform;
using testing::Scripted;
using testing::World;

// Two fake netns hosts, an optional setup step and iperf3 points (three, or `repetitions`
// repetitions of one).
std::string scenario_text(int repetitions = 1, const std::string& setup = "") {
  return fmt::format(R"(version: 1
name: fake
hosts:
  - {{name: a, provider: netns}}
  - {{name: b, provider: netns}}
{}
benchmarks:
  - name: tcp
    tool: iperf3
    server: a
    client: b
    repetitions: {}
    params:
      parallel: {}
      duration: 1s
    timeout: 2s
history: {{enabled: false}}
)",
                     setup, repetitions, repetitions == 1 ? "[1, 2, 3]" : "1");
}

// The shared harness, and the order in which things were created and removed.
struct Harness : testing::RunHarness {
  using RunHarness::RunHarness;

  // The order in which things were created and removed.
  std::vector<std::string> lifecycle() const {
    std::vector<std::string> seen;
    for (const auto& event : world.events()) {
      if (event.rfind("create ", 0) == 0 || event.rfind("remove ", 0) == 0) {
        seen.push_back(event);
      }
    }
    return seen;
  }
};

const std::vector<std::string> kCreatedThenRemoved = {"create netns a", "create netns b",
                                                      "remove b", "remove a"};

bool is_iperf3_client(const CommandSpec& spec) {
  return spec.argv[0] == "iperf3" && spec.argv[1] == "-c";
}

TEST_CASE("executor: every point passes, samples cold then warm, teardown LIFO", "[executor]") {
  Harness h(scenario_text());
  RunResult result = h.run();
  CHECK(result.status == RunStatus::kPassed);
  REQUIRE(result.points.size() == 3);
  for (const auto& point : result.points) {
    CHECK(point.status == PointStatus::kPassed);
    REQUIRE(point.samples.size() == 1);
    CHECK(point.samples[0].metrics.at("bandwidth_GBs") > 0);
  }
  CHECK_FALSE(result.points[0].samples[0].warm);
  CHECK(result.points[1].samples[0].warm);
  CHECK(result.points[2].samples[0].warm);
  CHECK(h.lifecycle() == kCreatedThenRemoved);
  // The tool's own version probe ran once, on a client host.
  CHECK(h.world.events_starting("run on b: iperf3 --version").size() == 1);
}

TEST_CASE("executor: readiness is observed by polling the server's port", "[executor]") {
  Harness h(scenario_text());
  auto base = h.world.script;
  h.world.script = [base](const std::string& host, const CommandSpec& spec) {
    Scripted scripted = base(host, spec);
    scripted.polls_to_ready = 5;  // the server listens on its sixth look
    return scripted;
  };
  RunResult result = h.run();
  CHECK(result.status == RunStatus::kPassed);
  CHECK(h.world.polls.at("a") >= 3 * 6);
  // Clients start only after their server listened: never before the sixth poll.
  auto events = h.world.events();
  auto first_client = std::find_if(events.begin(), events.end(), [](const std::string& e) {
    return e.rfind("run on b: iperf3 -c", 0) == 0;
  });
  CHECK(first_client != events.end());
}

TEST_CASE("executor: a server that never listens fails its point with the reason", "[executor]") {
  Harness h(scenario_text());
  auto base = h.world.script;
  h.world.script = [base](const std::string& host, const CommandSpec& spec) {
    Scripted scripted = base(host, spec);
    scripted.exits_early = spec.argv[0] == "iperf3" && spec.argv[1] == "-s";
    scripted.result.exit_code = scripted.exits_early ? 1 : 0;
    scripted.result.err = scripted.exits_early ? "iperf3: error - unable to start listener" : "";
    return scripted;
  };
  RunResult result = h.run();
  CHECK(result.status == RunStatus::kFailed);
  for (const auto& point : result.points) {
    CHECK(point.status == PointStatus::kFailed);
    CHECK(point.reason.find("server exited before it was ready (exit status 1): iperf3: error - "
                            "unable to start listener") != std::string::npos);
  }
  CHECK(h.world.events_starting("run on b: iperf3 -c").empty());
}

TEST_CASE("executor: a failed point is recorded with its reason and the run goes on",
          "[executor]") {
  Harness h(scenario_text());
  auto base = h.world.script;
  int clients = 0;
  h.world.script = [base, &clients](const std::string& host, const CommandSpec& spec) {
    Scripted scripted = base(host, spec);
    if (is_iperf3_client(spec) && ++clients == 1) {
      scripted.result.out = "not json at all";
    }
    return scripted;
  };
  RunResult result = h.run();
  CHECK(result.status == RunStatus::kFailed);
  CHECK(result.fatal_error.empty());
  CHECK(result.points[0].status == PointStatus::kFailed);
  CHECK(result.points[0].reason.find("iperf3") != std::string::npos);
  CHECK(result.points[0].reason.find("(log: ") != std::string::npos);
  CHECK(result.points[1].status == PointStatus::kPassed);
  CHECK(result.points[2].status == PointStatus::kPassed);
  CHECK(h.lifecycle() == kCreatedThenRemoved);
}

TEST_CASE("executor: an environment that vanishes stops the run at once", "[executor]") {
  Harness h(scenario_text());
  auto base = h.world.script;
  World* world = &h.world;
  int clients = 0;
  h.world.script = [base, world, &clients](const std::string& host, const CommandSpec& spec) {
    Scripted scripted = base(host, spec);
    if (is_iperf3_client(spec) && ++clients == 2) {
      // The host disappears while the second point's client runs, which then fails.
      world->vanished = "namespace ernic-x-a was removed";
      scripted.result.out = "";
      scripted.result.exit_code = 1;
    }
    return scripted;
  };
  RunResult result = h.run();
  CHECK(result.status == RunStatus::kFailed);
  CHECK(result.fatal_error.find("namespace ernic-x-a was removed") != std::string::npos);
  CHECK(result.points[0].status == PointStatus::kPassed);
  CHECK(result.points[1].status == PointStatus::kFailed);
  CHECK(result.points[2].reason == "not run");
  CHECK(h.world.events_starting("run on b: iperf3 -c").size() == 2);
  CHECK(h.lifecycle() == kCreatedThenRemoved);
}

TEST_CASE("executor: Ctrl-C during a point stops it, marks the run incomplete, tears down",
          "[executor]") {
  Harness h(scenario_text());
  auto base = h.world.script;
  h.world.script = [base](const std::string& host, const CommandSpec& spec) {
    Scripted scripted = base(host, spec);
    if (is_iperf3_client(spec)) {
      scripted.hangs = true;
      scripted.on_start = [] { Interrupt::request(); };
    }
    return scripted;
  };
  RunResult result = h.run();
  CHECK(result.status == RunStatus::kIncomplete);
  CHECK(result.fatal_error == "interrupted");
  CHECK(result.points[0].status == PointStatus::kFailed);
  CHECK(result.points[0].samples.empty());
  CHECK(h.world.events_starting("run on b: iperf3 -c").size() == 1);
  CHECK(h.lifecycle() == kCreatedThenRemoved);
}

TEST_CASE("executor: a signal that arrives during teardown still makes the run incomplete",
          "[executor]") {
  Harness h(scenario_text());
  h.fakes.provider("netns").on_remove = [] { Interrupt::request(); };
  RunResult result = h.run();
  CHECK(result.status == RunStatus::kIncomplete);
  CHECK(result.fatal_error == "interrupted");
  // What finished is still there, and teardown went on to the end.
  CHECK(result.points[2].status == PointStatus::kPassed);
  CHECK(h.lifecycle() == kCreatedThenRemoved);
}

TEST_CASE("executor: a failing setup step and a failing provider still tear everything down",
          "[executor]") {
  SECTION("setup") {
    Harness h(scenario_text(1, "setup:\n  - {step: command, hosts: [b], run: prepare-b}\n"));
    auto base = h.world.script;
    h.world.script = [base](const std::string& host, const CommandSpec& spec) {
      Scripted scripted = base(host, spec);
      if (spec.display().find("prepare-b") != std::string::npos) {
        scripted.result.exit_code = 3;
      }
      return scripted;
    };
    RunResult result = h.run();
    CHECK(result.status == RunStatus::kFailed);
    CHECK(result.fatal_error.find("setup step command failed on b") != std::string::npos);
    CHECK(result.points[0].reason == "not run");
    CHECK(h.lifecycle() == kCreatedThenRemoved);
  }
  SECTION("provider") {
    Harness h(scenario_text());
    h.fakes.provider("netns").fail_after = 1;
    RunResult result = h.run();
    CHECK(result.status == RunStatus::kFailed);
    CHECK(result.fatal_error == "netns could not create b");
    CHECK(h.lifecycle() == std::vector<std::string>{"create netns a", "remove a"});
  }
}

TEST_CASE("executor: repetitions run the point again and keep every sample", "[executor]") {
  Harness h(scenario_text(3));
  RunResult result = h.run();
  REQUIRE(result.points.size() == 1);
  CHECK(result.points[0].status == PointStatus::kPassed);
  REQUIRE(result.points[0].samples.size() == 3);
  for (int i = 0; i < 3; ++i) {
    CHECK(result.points[0].samples[i].repetition == i + 1);
  }
  CHECK(h.world.events_starting("run on b: iperf3 -c").size() == 3);
  CHECK(result.points[0].logs.size() == 3);
}

// Two embedded hosts on two fake instances, perftest bandwidth points for `verbs`.
std::string embedded_scenario_text(const std::string& verbs) {
  return fmt::format(R"(version: 1
name: fake-emulator
emulator: {{kind: embedded, instances: 2}}
hosts:
  - {{name: g1, provider: embedded, instance: 1}}
  - {{name: g2, provider: embedded, instance: 2}}
benchmarks:
  - name: bw
    tool: perftest
    server: g1
    client: g2
    params: {{verb: {}, mode: bw, size: 4KiB, iterations: 10}}
history: {{enabled: false}}
)",
                     verbs);
}

TEST_CASE("executor: missing perftest on an emulator host names the load generator instead",
          "[executor][verbs]") {
  Harness h(embedded_scenario_text("send"));
  h.world.missing_programs = {"ib_send_bw"};
  RunResult result = h.run();
  CHECK(result.status == RunStatus::kFailed);
  CHECK_THAT(result.fatal_error,
             Catch::Contains("ib_send_bw is not installed on g1 (fake); install the Debian "
                             "package perftest, or measure with ernicctl's load generator "
                             "(`program: load-generator`)"));
  CHECK(h.world.events_starting("run on g2: ib_send_bw -d").empty());

  // With the load generator chosen, the host needs no perftest.
  Harness generated(embedded_scenario_text("send, program: load-generator"));
  generated.world.missing_programs = {"ib_send_bw"};
  RunResult passed = generated.run();
  INFO(passed.fatal_error);
  CHECK(passed.fatal_error.find("not installed") == std::string::npos);
  CHECK(generated.world.events_starting("run on g2: /opt/ernicctl perf send_bw").size() == 1);
}

TEST_CASE("executor: a dead emulator instance stops the run naming it", "[executor]") {
  Harness h(embedded_scenario_text("[send, write]"));
  auto& kind = h.fakes.kind("embedded");
  h.world.script = [&kind](const std::string& host, const CommandSpec&) {
    Scripted scripted;
    if (host == "g2") {  // the first client fails: its instance died under it
      scripted.result.exit_code = 1;
      kind.dead = "instance 1 (manager, pid 42) was killed by signal 11";
    }
    return scripted;
  };
  RunResult result = h.run();
  CHECK(result.status == RunStatus::kFailed);
  CHECK(result.fatal_error.find("instance 1 (manager, pid 42) was killed by signal 11") !=
        std::string::npos);
  CHECK(result.points[1].reason == "not run");
  CHECK(h.world.events_starting("stop instances").size() == 1);
}

TEST_CASE("executor: an instance whose death shows only after its client failed is named",
          "[executor]") {
  Harness h(embedded_scenario_text("[send, write]"));
  auto& kind = h.fakes.kind("embedded");
  kind.dead = "instance 2 (worker on B) exited: killed by signal 9";
  kind.dead_from = std::chrono::steady_clock::time_point::max();
  h.world.script = [&kind](const std::string& host, const CommandSpec&) {
    Scripted scripted;
    if (host == "g2") {
      // The client saw its peer go first; the instance's exit reaches check_alive 0.4 s later
      // (an exit status over SSH, a stats file written every second).
      scripted.result.exit_code = 1;
      kind.dead_from = std::chrono::steady_clock::now() + std::chrono::milliseconds(400);
    }
    return scripted;
  };
  RunResult result = h.run();
  CHECK(result.status == RunStatus::kFailed);
  CHECK(result.fatal_error.find("instance 2 (worker on B) exited") != std::string::npos);
  CHECK(result.points[1].reason == "not run");
}

// What `up` left for scenario_text()'s hosts, as run --attach reads it from up.json.
Attachment fake_attachment(std::vector<std::string> hosts = {"a", "b"}) {
  Attachment attachment{.scenario_name = "fake",
                        .up_run_dir = "/runs/up",
                        .up_run_token = "up1234",
                        .up_since = "2026-12-01T10:00:00Z",
                        .emulator_kind = "none",
                        .hosts = {},
                        .instances = {}};
  for (const auto& name : hosts) {
    attachment.hosts.emplace_back(
        "netns",
        AttachedHost{
            .name = name, .address = "up-" + name, .facts = {{"netns", "ernic-up1234-" + name}}});
  }
  return attachment;
}

TEST_CASE("executor: an attached run creates and removes nothing, and every sample is warm",
          "[executor][attach]") {
  Harness h(scenario_text());
  Attachment attachment = fake_attachment();
  RunResult result = h.run(RunOptions{.attach = &attachment});
  INFO(result.fatal_error);
  REQUIRE(result.status == RunStatus::kPassed);
  CHECK(h.lifecycle().empty());
  CHECK(h.world.events_starting("attach netns ") ==
        std::vector<std::string>{"attach netns a", "attach netns b"});
  for (const auto& point : result.points) {
    for (const auto& sample : point.samples) {
      CHECK(sample.warm);
    }
  }
  // The hosts are reached where up made them.
  CHECK_THAT(result.points[0].client_command, Catch::Contains("-c up-a"));
  REQUIRE(result.attached_to.has_value());
  CHECK(result.attached_to->up_run_token == "up1234");
  CHECK(result.attached_to->up_run_dir == "/runs/up");
  REQUIRE(result.hosts.size() == 2);
  CHECK(result.hosts[0].attached);
  CHECK(result.hosts[0].facts.at("netns") == "ernic-up1234-a");
}

TEST_CASE("executor: attaching to what is not up fails before anything starts",
          "[executor][attach]") {
  Harness h(scenario_text());
  Attachment missing_host = fake_attachment({"a"});
  CHECK_THROWS_WITH(h.run(RunOptions{.attach = &missing_host}),
                    Catch::Contains("host b of fake is not up"));
  Attachment other_kind = fake_attachment();
  other_kind.emulator_kind = "embedded";
  CHECK_THROWS_WITH(h.run(RunOptions{.attach = &other_kind}),
                    Catch::Contains("wants emulator kind none, but up started kind embedded"));
  CHECK(h.world.events().empty());

  // A host that is gone: the run fails before its first point, and removes nothing.
  Attachment attachment = fake_attachment();
  h.fakes.provider("netns").gone = {"b"};
  RunResult result = h.run(RunOptions{.attach = &attachment});
  CHECK(result.status == RunStatus::kFailed);
  CHECK_THAT(result.fatal_error, Catch::Contains("host b is gone"));
  CHECK(result.points[0].reason == "not run");
  CHECK(h.lifecycle().empty());
}

TEST_CASE("executor: an attached instance that died fails the run before its first point",
          "[executor][attach]") {
  Harness h(embedded_scenario_text("send"));
  Attachment attachment{.scenario_name = "fake-emulator",
                        .up_run_dir = "/runs/up",
                        .up_run_token = "up1234",
                        .up_since = "",
                        .emulator_kind = "embedded",
                        .hosts = {},
                        .instances = {ManifestInstance{.id = 1}, ManifestInstance{.id = 2}}};
  for (const char* name : {"g1", "g2"}) {
    attachment.hosts.emplace_back(
        "embedded",
        AttachedHost{.name = name, .address = "127.0.0.1", .facts = {{"perf_socket", "/s"}}});
  }
  h.fakes.kind("embedded").dead = "instance 2 (worker, pid 43), left running by up, is gone";
  RunResult result = h.run(RunOptions{.attach = &attachment});
  CHECK(result.status == RunStatus::kFailed);
  CHECK_THAT(result.fatal_error, Catch::Contains("instance 2 (worker, pid 43)"));
  CHECK(result.points[0].reason == "not run");
  CHECK(h.world.events_starting("run on").empty());
  CHECK(h.world.events_starting("stop instances").empty());
  CHECK(h.world.events_starting("attach 2 instances").size() == 1);
}

}  // namespace
}  // namespace ernic
