#pragma once

#include <CLI/CLI.hpp>

#include "base/command_context.h"

namespace ernic {

// `ernicctl doctor [HOST...]`: checks this machine (or remote ones over SSH) for what scenarios
// need and says how to fix each gap.
void register_doctor_command(CLI::App& app, CommandContext& context);

}  // namespace ernic
