#pragma once

#include <CLI/CLI.hpp>

#include "base/command_context.h"

namespace ernic::reports {

// Adds `ernicctl report`, `ernicctl compare` and `ernicctl history`.
void register_commands(CLI::App& app, CommandContext& context);

}  // namespace ernic::reports
