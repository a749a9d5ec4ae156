#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "scenario/diagnostics.h"

namespace ernic {

// Applies `--set key.path=value` assignments to a loaded document, in order (the value in YAML
// syntax; list items are addressed by index or by their `name`). A bad assignment is reported
// under the file name "--set" and leaves the document unchanged; the result is validated
// afterwards like the file itself.
void apply_overrides(YAML::Node root, const std::vector<std::string>& assignments,
                     Diagnostics& out);

}  // namespace ernic
