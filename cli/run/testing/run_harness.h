// Loads, plans and runs a scenario text on the platform of fakes, in a fresh runs directory:
// what the executor's tests share.
#pragma once

#include <fmt/format.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/interrupt.h"
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

  // `status`: where progress goes (none shown by default).
  RunResult run(RunOptions options = {}, Status* status = nullptr) {
    options.runs_dir = runs;
    auto quiet = make_status(/*quiet=*/true);
    RealCommandRunner runner;
    return Executor(plan, fakes.platform, runner, options, status ? *status : *quiet).run();
  }
};

// A status that shows nothing and keeps the warnings a person would see scroll by.
class RecordingStatus final : public Status {
 public:
  void phase(std::string_view) override {}
  void point_started(int, int, std::string_view, int, int) override {}
  void point_finished(int, int, std::string_view, bool, std::string_view) override {}
  void warning(std::string_view text) override {
    std::lock_guard lock(mutex_);
    warnings_.emplace_back(text);
  }
  void finish() override {}
  std::vector<std::string> warnings() const {
    std::lock_guard lock(mutex_);
    return warnings_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> warnings_;
};

}  // namespace ernic::testing
