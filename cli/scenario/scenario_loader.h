#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "scenario/diagnostics.h"
#include "scenario/scenario.h"
#include "scenario/schema.h"

namespace ernic {

struct LoadResult {
  std::optional<Scenario> scenario;  // set only when there are no diagnostics
  Diagnostics diagnostics;
};

// Reads, overrides (`--set key.path=value`, value in YAML syntax; list items are addressed by
// index or by their `name`), and validates a scenario. Reports every problem at once.
LoadResult load_scenario(const std::filesystem::path& file,
                         const std::vector<std::string>& overrides);
// The same from text, for tests; `file` only names it in diagnostics.
LoadResult load_scenario_text(const std::string& text, const std::string& file,
                              const std::vector<std::string>& overrides);

// The complete scenario schema (providers, steps and tools included) as a JSON Schema.
nlohmann::json scenario_json_schema();

}  // namespace ernic
