#include "scenario/diagnostics.h"

#include <fmt/format.h>

namespace ernic {

std::string Diagnostic::format() const {
  std::string location = file;
  if (line > 0) {
    location += fmt::format(":{}:{}", line, column);
  }
  if (path.empty()) {
    return fmt::format("{}: {}", location, message);
  }
  return fmt::format("{}: {}: {}", location, path, message);
}

}  // namespace ernic
