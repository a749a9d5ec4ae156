#pragma once

#include <nlohmann/json.hpp>

namespace ernic {

struct Platform;

// The complete scenario schema (the platform's providers, kinds, steps and tools included) as
// a JSON Schema for editors: scenarios/schema.json, printed by `ernicctl schema`.
nlohmann::json scenario_json_schema(const Platform& platform);

}  // namespace ernic
