#include "scenario/scenario_json_schema.h"

#include "benchmarks/benchmark.h"
#include "emulators/emulator_kind.h"
#include "hosts/provider.h"
#include "scenario/platform.h"
#include "scenario/scenario_schema.h"
#include "setup/setup_step.h"

namespace ernic {
namespace {

// One alternative per component, told apart by the value of `discriminator`.
template <typename Component, typename Schema, typename Name>
nlohmann::json one_of(const std::vector<Component>& components, const char* discriminator,
                      Schema schema_of, Name name_of) {
  nlohmann::json alternatives = nlohmann::json::array();
  for (const auto* component : components) {
    const auto schema = schema_of(*component);
    nlohmann::json one = to_json_schema(schema);
    nlohmann::json tag = nlohmann::json::object();
    tag["const"] = std::string(name_of(*component));
    one["properties"][discriminator] = std::move(tag);
    alternatives.push_back(std::move(one));
  }
  nlohmann::json result = nlohmann::json::object();
  result["oneOf"] = std::move(alternatives);
  return result;
}

nlohmann::json non_empty_list_of(nlohmann::json items) {
  nlohmann::json list = nlohmann::json::object();
  list["type"] = "array";
  list["minItems"] = 1;
  list["items"] = std::move(items);
  return list;
}

}  // namespace

nlohmann::json scenario_json_schema(const Platform& platform) {
  nlohmann::json schema = to_json_schema(top_level_schema(platform));
  schema["$schema"] = "https://json-schema.org/draft/2020-12/schema";
  schema["title"] = "ernicctl scenario";
  nlohmann::json& properties = schema["properties"];
  properties["hosts"] = non_empty_list_of(one_of(
      platform.providers, "provider",
      [&](const HostProvider& provider) { return host_schema_for(platform, provider); },
      [](const HostProvider& provider) { return provider.name(); }));
  properties["setup"] = nlohmann::json::object();
  properties["setup"]["type"] = "array";
  properties["setup"]["items"] = one_of(
      platform.setup_steps, "step",
      [&](const SetupStep& step) { return step_schema_for(platform, step); },
      [](const SetupStep& step) { return step.kind(); });
  properties["benchmarks"] = non_empty_list_of(one_of(
      platform.tools, "tool",
      [&](const Benchmark& tool) { return benchmark_schema_for(platform, &tool); },
      [](const Benchmark& tool) { return tool.tool(); }));
  for (auto& benchmark : properties["benchmarks"]["items"]["oneOf"]) {
    // `tenants:` is a list of pairs or a count; `client:` is needed unless the pairs name it.
    nlohmann::json& tenants = benchmark["properties"]["tenants"];
    nlohmann::json pairs = {{"type", "array"}, {"minItems", 1}, {"items", tenants["items"]}};
    nlohmann::json count = {{"type", "integer"}, {"minimum", 1}, {"maximum", kMaxTenants}};
    tenants = {{"description", tenants["description"]},
               {"anyOf", nlohmann::json::array({pairs, count})}};
    nlohmann::json by_client = {{"required", nlohmann::json::array({"client"})}};
    nlohmann::json by_tenants = {{"required", nlohmann::json::array({"tenants"})}};
    benchmark["anyOf"] = nlohmann::json::array({by_client, by_tenants});
  }
  properties["emulator"] = one_of(
      platform.emulator_kinds, "kind",
      [&](const EmulatorKind& kind) { return emulator_schema_for(platform, &kind); },
      [](const EmulatorKind& kind) { return kind.name(); });
  return schema;
}

}  // namespace ernic
