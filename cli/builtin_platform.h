#pragma once

#include "scenario/platform.h"

namespace ernic {

// The components built into ernicctl, in a stable order (the one `ernicctl schema` and
// `doctor` list them in). Adding a tool, provider, kind or step is one line in
// builtin_platform.cc. Only main and the commands above it name this: everything below takes
// a Platform, so tests hand it fakes.
Platform builtin_platform();

}  // namespace ernic
