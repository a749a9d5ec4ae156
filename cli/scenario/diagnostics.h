#pragma once

#include <string>
#include <vector>

namespace ernic {

// One problem found in a scenario (or in a --set override), located precisely enough that an
// editor can jump to it.
struct Diagnostic {
  std::string file;
  int line = 0;      // 1-based; 0 when unknown
  int column = 0;    // 1-based
  std::string path;  // key path, e.g. "benchmarks[1].params.size"
  std::string message;

  // "quickstart.yaml:12:7: benchmarks[1].params.size: expected a size such as 4KiB, found ..."
  std::string format() const;
};

using Diagnostics = std::vector<Diagnostic>;

}  // namespace ernic
