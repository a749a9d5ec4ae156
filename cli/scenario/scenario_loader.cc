// Loading a scenario, in order: parse, --set overrides (overrides.cc), the schema check
// (scenario_schema.cc), the checks across entries (semantic_checks.cc), then the typed Scenario
// (scenario_builder.cc).
#include "scenario/scenario_loader.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <ostream>
#include <sstream>
#include <tuple>

#include "scenario/overrides.h"
#include "scenario/platform.h"
#include "scenario/scenario_builder.h"
#include "scenario/scenario_schema.h"
#include "scenario/semantic_checks.h"

namespace ernic {
namespace {

void sort_by_location(Diagnostics& diagnostics) {
  std::stable_sort(diagnostics.begin(), diagnostics.end(),
                   [](const Diagnostic& a, const Diagnostic& b) {
                     return std::tie(a.line, a.column) < std::tie(b.line, b.column);
                   });
}

std::optional<YAML::Node> parse(const std::string& text, const std::string& file,
                                Diagnostics& out) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    out.push_back(Diagnostic{.file = file,
                             .line = e.mark.line + 1,
                             .column = e.mark.column + 1,
                             .path = "",
                             .message = fmt::format("malformed YAML: {}", e.msg)});
    return std::nullopt;
  }
  if (!root.IsMap()) {
    out.push_back(diagnostic_at(
        root, file, "", "expected a mapping with name, hosts and benchmarks at the top level"));
    return std::nullopt;
  }
  return root;
}

}  // namespace

LoadResult load_scenario_text(const Platform& platform, const std::string& text,
                              const std::string& file, const std::vector<std::string>& overrides) {
  LoadResult result;
  Diagnostics& errors = result.diagnostics;
  std::optional<YAML::Node> root = parse(text, file, errors);
  if (!root) {
    return result;
  }
  apply_overrides(*root, overrides, file, errors);
  if (!errors.empty()) {
    return result;
  }
  validate_scenario_schema(platform, *root, file, errors);
  check_references(platform, *root, file, errors);
  std::optional<Scenario> scenario;
  if (errors.empty()) {
    scenario = build_scenario(platform, *root, file);
    check_with_providers(platform, *scenario, errors);
    check_guest_region_machines(platform, *scenario, errors);
    check_concurrent_points(platform, *scenario, errors);
  }
  sort_by_location(errors);
  if (errors.empty()) {
    check_for_warnings(*root, file, result.warnings);
    sort_by_location(result.warnings);
    result.scenario = std::move(scenario);
  }
  return result;
}

LoadResult load_scenario(const Platform& platform, const std::filesystem::path& file,
                         const std::vector<std::string>& overrides) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    LoadResult result;
    result.diagnostics.push_back(
        Diagnostic{.file = file.string(),
                   .line = 0,
                   .column = 0,
                   .path = "",
                   .message = fmt::format("cannot read the scenario: {}", std::strerror(errno))});
    return result;
  }
  std::stringstream text;
  text << in.rdbuf();
  return load_scenario_text(platform, text.str(), file.string(), overrides);
}

void print_load_diagnostics(const LoadResult& loaded, const std::string& file, std::ostream& out) {
  for (const auto& warning : loaded.warnings) {
    out << warning.format() << "\n";
  }
  for (const auto& error : loaded.diagnostics) {
    out << error.format() << "\n";
  }
  if (!loaded.diagnostics.empty()) {
    out << fmt::format("{}: {} error{}; nothing was started\n", escape_control_characters(file),
                       loaded.diagnostics.size(), loaded.diagnostics.size() == 1 ? "" : "s");
  }
}

}  // namespace ernic
