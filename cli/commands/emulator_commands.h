#pragma once

#include <CLI/CLI.hpp>

#include "base/command_context.h"

namespace ernic::emulator {

// Adds `ernicctl emulator` (one instance) and `ernicctl perf` (the load generator).
void register_commands(CLI::App& app, CommandContext& context);

}  // namespace ernic::emulator
