#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "base/diagnostics.h"

namespace ernic {

// Applies `--set key.path=value` assignments to a loaded document, in order (the value in YAML
// syntax; list items are addressed by index or by their `name`). A mapping the document leaves
// out is created: `--set history.path=x` works on a scenario without `history:`. A bad
// assignment is reported under the file name "--set", or at the key of `file` that is in its
// way (a single value where the path needs a mapping), and leaves the document unchanged; the
// result is validated afterwards like the file itself.
void apply_overrides(YAML::Node root, const std::vector<std::string>& assignments,
                     const std::string& file, Diagnostics& out);

}  // namespace ernic
