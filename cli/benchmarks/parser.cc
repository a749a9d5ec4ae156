#include "benchmarks/parser.h"

#include <fmt/format.h>

namespace ernic {

ParseError::ParseError(std::string tool, int line, const std::string& message)
    : std::runtime_error(line > 0 ? fmt::format("{}: line {}: {}", tool, line, message)
                                  : fmt::format("{}: {}", tool, message)),
      tool_(std::move(tool)),
      line_(line) {}

}  // namespace ernic
