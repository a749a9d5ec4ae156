#pragma once

#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "base/diagnostics.h"
#include "base/schema.h"
#include "scenario/scenario.h"

namespace ernic {

struct Platform;

struct LoadResult {
  std::optional<Scenario> scenario;  // set only when there are no errors
  Diagnostics diagnostics;           // errors (Severity::kError): the scenario is not usable
  Diagnostics warnings;              // Severity::kWarning: valid, but probably not what was meant
};

// Reads, overrides (`--set key.path=value`, value in YAML syntax; list items are addressed by
// index or by their `name`), and validates a scenario against the platform's components.
// Reports every problem at once, errors and warnings each in file order.
LoadResult load_scenario(const Platform& platform, const std::filesystem::path& file,
                         const std::vector<std::string>& overrides);
// The same from text, for tests; `file` only names it in diagnostics.
LoadResult load_scenario_text(const Platform& platform, const std::string& text,
                              const std::string& file, const std::vector<std::string>& overrides);

// Prints a load's warnings, then its errors and, when there are any, "FILE: N errors; nothing
// was started", one diagnostic a line.
void print_load_diagnostics(const LoadResult& loaded, const std::string& file, std::ostream& out);

}  // namespace ernic
