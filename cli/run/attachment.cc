#include "run/attachment.h"

#include <fmt/format.h>

#include <stdexcept>

namespace ernic {
const AttachedHost* Attachment::find_host(const std::string& name, std::string* provider) const {
  for (const auto& [host_provider, host] : hosts) {
    if (host.name == name) {
      if (provider != nullptr) {
        *provider = host_provider;
      }
      return &host;
    }
  }
  return nullptr;
}

Attachment attachment_from_state(const UpState& state) {
  Attachment attachment;
  attachment.scenario_name = state.name;
  attachment.up_run_dir = state.run_dir;
  attachment.up_run_token = state.run_token;
  attachment.up_since = state.up_since.value_or("");
  attachment.emulator_kind = state.emulator_kind.value_or("");
  if (attachment.up_run_token.empty()) {
    throw std::runtime_error("the state file has no run_token; was it written by up?");
  }
  for (const auto& host : state.hosts) {
    attachment.hosts.emplace_back(
        host.provider,
        AttachedHost{.name = host.name, .address = host.address, .facts = host.facts});
  }
  attachment.instances = state.instances;
  return attachment;
}

std::string attachment_mismatch(const Scenario& scenario, const Attachment& attachment) {
  for (const auto& spec : scenario.hosts) {
    std::string provider;
    if (attachment.find_host(spec.name, &provider) == nullptr) {
      return fmt::format("host {} of {} is not up (up ran {})", spec.name, scenario.name,
                         attachment.scenario_name);
    }
    if (provider != spec.provider) {
      return fmt::format("host {} is a {} host in {}, but up made it a {} host", spec.name,
                         spec.provider, scenario.name, provider);
    }
  }
  const bool wants_instances = scenario.emulator.kind != "none";
  if (!attachment.emulator_kind.empty() && attachment.emulator_kind != scenario.emulator.kind) {
    return fmt::format("{} wants emulator kind {}, but up started kind {}", scenario.name,
                       scenario.emulator.kind, attachment.emulator_kind);
  }
  if (wants_instances && attachment.instances.empty()) {
    return fmt::format("{} wants {} emulator instances, but up left none running", scenario.name,
                       scenario.emulator.kind);
  }
  return "";
}

}  // namespace ernic
