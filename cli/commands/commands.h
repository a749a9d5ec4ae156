#pragma once

#include <CLI/CLI.hpp>

#include "common/command_context.h"

namespace ernic {

// `ernicctl run`, `validate`, `parse` and `schema`.
void register_run_command(CLI::App& app, CommandContext& context);
void register_validate_command(CLI::App& app, CommandContext& context);
void register_parse_command(CLI::App& app, CommandContext& context);
void register_schema_command(CLI::App& app, CommandContext& context);

}  // namespace ernic
