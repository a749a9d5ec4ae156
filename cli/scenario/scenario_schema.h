#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include "base/diagnostics.h"
#include "base/schema.h"

namespace ernic {

struct Platform;
class Benchmark;
class EmulatorKind;
class HostProvider;
class SetupStep;

// The scenario's schema, assembled from the platform's components: the top level declares the
// outer shape, and each entry of `hosts`, `setup`, `benchmarks` and the `emulator` section
// takes the keys of the component it names. Validation, "did you mean" and the JSON Schema
// export all read these; nothing else declares a scenario key.
ObjectSchema top_level_schema(const Platform& platform);
ObjectSchema host_schema_for(const Platform& platform, const HostProvider& provider);
// A host whose provider is missing or unknown: the keys any provider takes, so that typos
// still get suggestions.
ObjectSchema any_host_schema(const Platform& platform);
// `kind` is null when the section names no known kind.
ObjectSchema emulator_schema_for(const Platform& platform, const EmulatorKind* kind);
ObjectSchema step_schema_for(const Platform& platform, const SetupStep& step);
// `tool` is null when the entry names no known tool.
ObjectSchema benchmark_schema_for(const Platform& platform, const Benchmark* tool);
// `hosts[].instance`, for the check that the named instance exists.
const FieldSchema& host_instance_field();
// `benchmarks[].tenants` in its count form (`tenants: 4`); the list form is in the entry's
// schema.
inline constexpr int kMaxTenants = 64;
const FieldSchema& tenant_count_field();

// Validates the whole document against its schema, each entry against its component's,
// appending every problem found.
void validate_scenario_schema(const Platform& platform, const YAML::Node& root,
                              const std::string& file, Diagnostics& out);

}  // namespace ernic
