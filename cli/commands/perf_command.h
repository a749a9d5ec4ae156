#pragma once

#include <CLI/CLI.hpp>

#include "base/command_context.h"

namespace ernic::emu::perf {

// `ernicctl perf VERB_MODE ...` (the perftest-equivalent load generator) and
// `ernicctl perf micro ...` (the microbenchmarks that attribute cost to a layer).
void register_perf(CLI::App& app, CommandContext& context);

}  // namespace ernic::emu::perf
