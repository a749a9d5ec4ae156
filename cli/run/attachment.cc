#include "run/attachment.h"

#include <fmt/format.h>

#include <stdexcept>

namespace ernic {
namespace {
using nlohmann::json;

std::string text_at(const json& object, const char* key) {
  return object.value(key, std::string());
}

}  // namespace

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

Attachment attachment_from_state(const json& state) try {
  Attachment attachment;
  attachment.scenario_name = text_at(state, "name");
  attachment.up_run_dir = text_at(state, "run_dir");
  attachment.up_run_token = text_at(state, "run_token");
  attachment.up_since = text_at(state, "up_since");
  attachment.emulator_kind = text_at(state, "emulator_kind");
  if (attachment.up_run_token.empty() || !state.contains("hosts")) {
    throw std::runtime_error("the state file has no run_token or hosts; was it written by up?");
  }
  for (const auto& host : state["hosts"]) {
    AttachedHost attached{
        .name = text_at(host, "name"),
        .address = text_at(host, "address"),
        .facts = host.value("facts", json::object()).get<std::map<std::string, std::string>>()};
    attachment.hosts.emplace_back(text_at(host, "provider"), std::move(attached));
  }
  if (state.contains("instances") && state["instances"].is_array()) {
    attachment.instances = state["instances"];
  }
  return attachment;
} catch (const json::exception& e) {
  throw std::runtime_error(std::string("the state file is not as `ernicctl up` writes it: ") +
                           e.what());
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
