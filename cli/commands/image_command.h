#pragma once

#include <CLI/CLI.hpp>

#include "base/command_context.h"

namespace ernic {

// `ernicctl image build RECIPE [--out DIR] [--force]`: builds (or finds in the cache) a guest
// image and prints where its manifest is.
void register_image_command(CLI::App& app, CommandContext& context);

}  // namespace ernic
