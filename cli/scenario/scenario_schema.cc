#include "scenario/scenario_schema.h"

#include <fmt/format.h>

#include "benchmarks/benchmark.h"
#include "emulators/emulator_kind.h"
#include "hosts/provider.h"
#include "scenario/platform.h"
#include "setup/setup_step.h"

namespace ernic {
namespace {

std::shared_ptr<const ObjectSchema> object(ObjectSchema schema) {
  return std::make_shared<const ObjectSchema>(std::move(schema));
}

template <typename Component, typename Name>
std::vector<std::string> names_of(const std::vector<Component>& components, Name name_of) {
  std::vector<std::string> names;
  for (const auto* component : components) {
    names.emplace_back(name_of(*component));
  }
  return names;
}

const FieldSchema kNameField{.name = "name",
                             .kind = ValueKind::kString,
                             .description = "Unique name, used in logs and point ids",
                             .required = true};

const FieldSchema kInstanceField{
    .name = "instance",
    .kind = ValueKind::kInteger,
    .description = "Emulator instance the host is attached to (1 = manager)",
    .minimum = 1,
    .maximum = 64};

// The keys every host has, whatever its provider.
std::vector<FieldSchema> common_host_fields(const Platform& platform) {
  return {
      kNameField,
      {.name = "provider",
       .kind = ValueKind::kEnum,
       .description = "How the host comes to exist",
       .required = true,
       .enum_values = names_of(platform.providers, [](const HostProvider& p) { return p.name(); })},
      {.name = "address",
       .kind = ValueKind::kIpv4,
       .description = "Test-network address; providers assign one when omitted"},
      kInstanceField};
}

FieldSchema step_kind_field(const Platform& platform) {
  return {
      .name = "step",
      .kind = ValueKind::kEnum,
      .description = "The kind of step",
      .required = true,
      .enum_values = names_of(platform.setup_steps, [](const SetupStep& s) { return s.kind(); })};
}

ObjectSchema tenant_schema() {
  ObjectSchema tenant{.description = "One server/client pair of the benchmark", .fields = {}};
  tenant.fields = {{.name = "name",
                    .kind = ValueKind::kString,
                    .description = "Names the tenant in logs and samples (default t1, t2, ...)"},
                   {.name = "server",
                    .kind = ValueKind::kString,
                    .description = "Host that runs this tenant's server side"},
                   {.name = "client",
                    .kind = ValueKind::kString,
                    .description = "Host that runs this tenant's client side",
                    .required = true}};
  return tenant;
}

FieldSchema tenants_field() {
  return {.name = "tenants",
          .kind = ValueKind::kList,
          .description =
              "Server/client pairs that run every point at once (servers ready "
              "before any client starts), or a count N taking the i-th host of the "
              "`server:` and `client:` lists",
          .object = object(tenant_schema())};
}

void append_fields(ObjectSchema& schema, const ObjectSchema& more) {
  for (const auto& field : more.fields) {
    if (!schema.find(field.name)) {
      schema.fields.push_back(field);
    }
  }
}

ObjectSchema history_schema() {
  ObjectSchema history{.description = "Where results are appended", .fields = {}};
  history.fields = {
      {.name = "enabled", .kind = ValueKind::kBoolean, .default_text = "true"},
      {.name = "path",
       .kind = ValueKind::kString,
       .description = "JSONL history, relative to the current directory",
       .default_text = "perf/history.jsonl"},
      {.name = "tracked_sizes",
       .kind = ValueKind::kList,
       .description = "Sizes published in series and badges",
       .element = ValueKind::kSize,
       .default_text = "[4KiB, 64KiB, 1MiB]"},
      {.name = "publish",
       .kind = ValueKind::kBoolean,
       .description = "Whether this scenario feeds rocm-ernic's series and badges (the "
                      "record's top-level series and badges); false keeps its series under "
                      "ernicctl.series, charted by ernicctl report as this scenario's own",
       .default_text = "true"},
  };
  return history;
}

ObjectSchema concurrent_schema() {
  ObjectSchema group{.description = "Benchmarks whose points start together", .fields = {}};
  group.fields = {kNameField,
                  {.name = "benchmarks",
                   .kind = ValueKind::kList,
                   .description = "Benchmark entries with as many points and repetitions each; "
                                  "the k-th point of each starts with the k-th of the others",
                   .required = true,
                   .element = ValueKind::kString}};
  return group;
}

ObjectSchema ab_pair_schema() {
  ObjectSchema ab_pair{.description = "B/A comparison measured side by side", .fields = {}};
  ab_pair.fields = {kNameField,
                    {.name = "a",
                     .kind = ValueKind::kString,
                     .description = "Baseline benchmark",
                     .required = true},
                    {.name = "b",
                     .kind = ValueKind::kString,
                     .description = "Candidate benchmark",
                     .required = true},
                    {.name = "metric",
                     .kind = ValueKind::kString,
                     .description = "Metric to compare",
                     .required = true}};
  return ab_pair;
}

void validate_emulator(const Platform& platform, const YAML::Node& emulator,
                       const std::string& file, Diagnostics& out) {
  if (!emulator.IsMap()) {
    return;  // the top level reports it
  }
  const EmulatorKind* kind = platform.emulator_kind(scalar_text(emulator["kind"]));
  validate(emulator, emulator_schema_for(platform, kind), file, "emulator", out);
}

void validate_hosts(const Platform& platform, const YAML::Node& hosts, const std::string& file,
                    Diagnostics& out) {
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    std::string path = fmt::format("hosts[{}]", i);
    const YAML::Node& host = hosts[i];
    if (!host.IsMap()) {
      out.push_back(diagnostic_at(host, file, path, "expected a mapping with name and provider"));
      continue;
    }
    const HostProvider* provider = platform.provider(scalar_text(host["provider"]));
    validate(host, provider ? host_schema_for(platform, *provider) : any_host_schema(platform),
             file, path, out);
  }
}

void validate_setup(const Platform& platform, const YAML::Node& steps, const std::string& file,
                    Diagnostics& out) {
  for (std::size_t i = 0; i < steps.size(); ++i) {
    std::string path = fmt::format("setup[{}]", i);
    const YAML::Node& entry = steps[i];
    if (!entry.IsMap()) {
      out.push_back(diagnostic_at(entry, file, path, "expected a mapping with a 'step' key"));
    } else if (const SetupStep* step = platform.setup_step(scalar_text(entry["step"]))) {
      validate(entry, step_schema_for(platform, *step), file, path, out);
    } else if (!entry["step"]) {
      out.push_back(diagnostic_at(entry, file, path, "missing required key 'step'"));
    } else {
      validate_field(entry["step"], step_kind_field(platform), file, path + ".step", out);
    }
  }
}

void validate_benchmarks(const Platform& platform, const YAML::Node& benchmarks,
                         const std::string& file, Diagnostics& out) {
  for (std::size_t i = 0; i < benchmarks.size(); ++i) {
    std::string path = fmt::format("benchmarks[{}]", i);
    if (!benchmarks[i].IsMap()) {
      out.push_back(
          diagnostic_at(benchmarks[i], file, path, "expected a mapping with name and tool"));
      continue;
    }
    const Benchmark* tool = platform.tool(scalar_text(benchmarks[i]["tool"]));
    ObjectSchema schema = benchmark_schema_for(platform, tool);
    if (benchmarks[i]["tenants"] && benchmarks[i]["tenants"].IsScalar()) {
      // `tenants: N`: the count form of the same key.
      for (auto& field : schema.fields) {
        if (field.name == "tenants") {
          field = tenant_count_field();
        }
      }
    }
    validate(benchmarks[i], schema, file, path, out);
  }
}

}  // namespace

const FieldSchema& tenant_count_field() {
  static const FieldSchema field{.name = "tenants",
                                 .kind = ValueKind::kInteger,
                                 .description = "How many tenants run every point at once",
                                 .minimum = 1,
                                 .maximum = kMaxTenants};
  return field;
}

const FieldSchema& host_instance_field() {
  return kInstanceField;
}

ObjectSchema host_schema_for(const Platform& platform, const HostProvider& provider) {
  ObjectSchema schema;
  schema.description = std::string(provider.description());
  schema.fields = common_host_fields(platform);
  append_fields(schema, provider.host_schema());
  return schema;
}

ObjectSchema any_host_schema(const Platform& platform) {
  ObjectSchema schema;
  schema.fields = common_host_fields(platform);
  for (const auto* provider : platform.providers) {
    append_fields(schema, provider->host_schema());
  }
  return schema;
}

ObjectSchema emulator_schema_for(const Platform& platform, const EmulatorKind* kind) {
  ObjectSchema schema;
  schema.description =
      kind ? std::string(kind->description()) : "Emulator instances started for the run";
  schema.fields = {{.name = "kind",
                    .kind = ValueKind::kEnum,
                    .description = "Which emulator the run starts",
                    .required = true,
                    .enum_values = names_of(platform.emulator_kinds,
                                            [](const EmulatorKind& k) { return k.name(); })}};
  if (kind) {
    append_fields(schema, kind->schema());
  }
  return schema;
}

ObjectSchema step_schema_for(const Platform& platform, const SetupStep& step) {
  ObjectSchema schema;
  schema.description = std::string(step.description());
  schema.fields = {step_kind_field(platform),
                   {.name = "hosts",
                    .kind = ValueKind::kList,
                    .description = "Hosts to apply the step to (default: all)",
                    .element = ValueKind::kString}};
  append_fields(schema, step.schema());
  return schema;
}

ObjectSchema benchmark_schema_for(const Platform& platform, const Benchmark* tool) {
  ObjectSchema schema;
  schema.description = tool ? std::string(tool->description()) : "A benchmark";
  schema.fields = {
      kNameField,
      {.name = "tool",
       .kind = ValueKind::kEnum,
       .description = "The benchmark module",
       .required = true,
       .enum_values = names_of(platform.tools, [](const Benchmark& b) { return b.tool(); })},
      {.name = "server",
       .kind = ValueKind::kString,
       .description = "Host that runs the server side; with `tenants: N`, a list of N hosts",
       .matrix = true},
      {.name = "client",
       .kind = ValueKind::kString,
       .description = "Host that runs the client side (the only side of single-host tools); "
                      "with `tenants: N`, a list of N hosts; required unless `tenants:` lists "
                      "the pairs",
       .matrix = true},
      tenants_field(),
      {.name = "repetitions",
       .kind = ValueKind::kInteger,
       .description = "Samples per point",
       .default_text = "1",
       .minimum = 1,
       .maximum = 10000},
      {.name = "timeout",
       .kind = ValueKind::kDuration,
       .description = "Limit for one repetition of one point; it is killed and recorded as failed",
       .default_text = "60s"},
      {.name = "port",
       .kind = ValueKind::kInteger,
       .description = "First TCP port; each point gets its own",
       .minimum = 1024,
       .maximum = 65000},
      {.name = "params",
       .kind = ValueKind::kObject,
       .description = "Tool parameters; a list value expands into one point per value",
       .object = object(tool ? tool->params() : ObjectSchema{})},
  };
  return schema;
}

ObjectSchema top_level_schema(const Platform& platform) {
  ObjectSchema schema;
  schema.description = "An ernicctl scenario (schema v1)";
  schema.fields = {
      {.name = "version",
       .kind = ValueKind::kInteger,
       .description = "Schema version",
       .minimum = 1,
       .maximum = 1},
      {.name = "name",
       .kind = ValueKind::kString,
       .description = "Scenario name: letters, digits, '.', '_' and '-'",
       .required = true},
      {.name = "description", .kind = ValueKind::kString},
      {.name = "runner",
       .kind = ValueKind::kString,
       .description = "Runner class: results of different classes are never charted together. "
                      "auto is github-hosted on a GitHub-hosted runner (RUNNER_ENVIRONMENT), "
                      "self-hosted elsewhere; rocm-ernic's publisher charts only those two, "
                      "any other class is allowed with a warning",
       .default_text = "auto"},
      // hosts, setup, benchmarks and emulator are checked entry by entry against the
      // provider's, step's, tool's and kind's own schema; these describe only the outer shape.
      {.name = "hosts",
       .kind = ValueKind::kList,
       .description = "Hosts, each named, with a provider",
       .required = true},
      {.name = "setup", .kind = ValueKind::kList, .description = "Setup steps, in order"},
      {.name = "benchmarks",
       .kind = ValueKind::kList,
       .description = "Benchmarks; matrix parameters expand into points",
       .required = true},
      {.name = "emulator",
       .kind = ValueKind::kObject,
       .description = "Emulator instances started for the run"},
      {.name = "history", .kind = ValueKind::kObject, .object = object(history_schema())},
      {.name = "ab_pairs", .kind = ValueKind::kList, .object = object(ab_pair_schema())},
      {.name = "concurrent",
       .kind = ValueKind::kList,
       .description = "Groups of benchmarks run at the same time",
       .object = object(concurrent_schema())},
  };
  for (const auto* provider : platform.providers) {
    if (const ObjectSchema* settings = provider->settings_schema()) {
      schema.fields.push_back(
          {.name = std::string(provider->name()),
           .kind = ValueKind::kObject,
           .description = fmt::format("Settings of the {} provider", provider->name()),
           .object = object(*settings)});
    }
  }
  return schema;
}

void validate_scenario_schema(const Platform& platform, const YAML::Node& root,
                              const std::string& file, Diagnostics& out) {
  validate(root, top_level_schema(platform), file, "", out);
  if (root["emulator"]) {
    validate_emulator(platform, root["emulator"], file, out);
  }
  if (root["hosts"] && root["hosts"].IsSequence()) {
    validate_hosts(platform, root["hosts"], file, out);
  }
  if (root["setup"] && root["setup"].IsSequence()) {
    validate_setup(platform, root["setup"], file, out);
  }
  if (root["benchmarks"] && root["benchmarks"].IsSequence()) {
    validate_benchmarks(platform, root["benchmarks"], file, out);
  }
}

}  // namespace ernic
