#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

#include "base/command_context.h"
#include "plan/plan.h"
#include "run/executor.h"
#include "scenario/scenario.h"

namespace ernic {

// `ernicctl run`, `validate`, `parse` and `schema`.
void register_run_command(CLI::App& app, CommandContext& context);
void register_validate_command(CLI::App& app, CommandContext& context);
void register_parse_command(CLI::App& app, CommandContext& context);
void register_schema_command(CLI::App& app, CommandContext& context);
// `ernicctl completion bash`: shell completion generated from the command tree.
void register_completion_command(CLI::App& app, CommandContext& context);
// `ernicctl up`, `status`, `logs`, `stats`, `ssh` and `down`: a scenario's hosts and
// instances left running for a developer, and everything removed again.
void register_bringup_commands(CLI::App& app, CommandContext& context);

// Loads a scenario with --set overrides; prints every diagnostic and returns nothing when it
// is not valid.
std::optional<Scenario> load_or_report(const Platform& platform, const std::string& file,
                                       const std::vector<std::string>& sets);

// Runs the plan with live progress (plain lines when `quiet`); prints a preflight error and
// returns nothing when the run could not start.
std::optional<RunResult> execute_plan(const Plan& plan, const Platform& platform,
                                      const RunOptions& options, bool quiet);

}  // namespace ernic
