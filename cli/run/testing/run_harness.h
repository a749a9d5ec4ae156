// Loads, plans and runs a scenario text on the platform of fakes, in a fresh runs directory:
// what the executor's tests share.
#pragma once

#include <fmt/format.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <filesystem>
#include <optional>
#include <string>

#include "common/interrupt.h"
#include "run/executor.h"
#include "run/testing/fake_platform.h"
#include "samples.h"
#include "scenario/scenario_loader.h"

namespace ernic::testing {

struct RunHarness {
  World world;
  FakePlatform fakes{world};
  std::optional<Scenario> scenario;
  Plan plan;
  std::filesystem::path runs =
      std::filesystem::temp_directory_path() / fmt::format("ernic-executor-test-{}", ::getpid());

  explicit RunHarness(const std::string& text) {
    Interrupt::reset();
    LoadResult loaded = load_scenario_text(fakes.platform, text, "fake.yaml", {});
    for (const auto& d : loaded.diagnostics) {
      FAIL(d.format());
    }
    scenario = std::move(loaded.scenario);
    plan = make_plan(*scenario, fakes.platform);
    // Every iperf3 client prints a real result unless a test scripts otherwise.
    world.script = [](const std::string&, const CommandSpec& spec) {
      Scripted scripted;
      scripted.result.exit_code = 0;
      if (spec.argv[0] == "iperf3" && spec.argv[1] == "-c") {
        scripted.result.out = read_sample("iperf3_netns.client.json");
      }
      return scripted;
    };
  }
  ~RunHarness() {
    std::filesystem::remove_all(runs);
    Interrupt::reset();
  }

  RunResult run(RunOptions options = {}) {
    options.runs_dir = runs;
    auto status = make_status(/*quiet=*/true);
    RealCommandRunner runner;
    return Executor(plan, fakes.platform, runner, options, *status).run();
  }
};

}  // namespace ernic::testing
