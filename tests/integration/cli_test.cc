// What the ernicctl binary says when it is given no command: the overview, never CLI11's bare
// "A subcommand is required".
#include <algorithm>
#include <catch2/catch.hpp>
#include <sstream>

#include "ernicctl_runner.h"

using Catch::Matchers::Contains;

namespace {

// The names the overview lists under "Commands:", one line each.
std::vector<std::string> listed_commands(const std::string& overview) {
  std::istringstream lines(overview);
  std::vector<std::string> names;
  bool in_commands = false;
  for (std::string line; std::getline(lines, line);) {
    if (line == "Commands:" || line.empty()) {
      in_commands = line == "Commands:";
    } else if (in_commands) {
      std::istringstream words(line);
      std::string name;
      words >> name;
      names.push_back(name);
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

TEST_CASE("ernicctl with no arguments lists every command and the two to start with, exit 2") {
  auto result = run_ernicctl({});
  CHECK(result.exit_code == 2);
  CHECK(result.err.empty());
  CHECK_THAT(result.out, !Contains("A subcommand is required"));
  CHECK(listed_commands(result.out) ==
        std::vector<std::string>{"compare", "completion", "doctor", "down", "emulator", "history",
                                 "image", "logs", "parse", "perf", "report", "run", "schema", "ssh",
                                 "stats", "status", "up", "validate", "verbs-env"});
  // Name, then the description's first line, aligned.
  CHECK_THAT(result.out, Contains("\n  run         Run a scenario: hosts, setup, every benchmark"));
  CHECK_THAT(result.out, Contains("\n  validate    Check a scenario without running anything"));
  CHECK_THAT(result.out, Contains("Start with:\n  ernicctl run "));
  CHECK_THAT(result.out, Contains("quickstart.yaml --dry-run"));
  CHECK_THAT(result.out, Contains("'ernicctl COMMAND --help'"));
}

TEST_CASE("a wrong command still gets CLI11's error, and --help still exits 0") {
  auto bad = run_ernicctl({"nonsense"});
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.err, Contains("nonsense"));
  auto help = run_ernicctl({"run", "--help"});
  CHECK(help.exit_code == 0);
  CHECK_THAT(help.out, Contains("--dry-run"));
}
