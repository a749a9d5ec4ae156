#include "run/up_state.h"

#include <fstream>
#include <sstream>

#include "base/durable_file.h"

namespace ernic {
using nlohmann::json;

std::string UpHost::fact(const std::string& fact_name) const {
  auto it = facts.find(fact_name);
  return it == facts.end() ? "" : it->second;
}

const UpHost* UpState::find_host(const std::string& host_name) const {
  for (const auto& host : hosts) {
    if (host.name == host_name) {
      return &host;
    }
  }
  return nullptr;
}

const ManifestInstance* UpState::find_instance(int id) const {
  for (const auto& instance : instances) {
    if (instance.id == id) {
      return &instance;
    }
  }
  return nullptr;
}

void to_json(json& out, const UpHost& host) {
  out = {{"name", host.name},
         {"provider", host.provider},
         {"address", host.address},
         {"facts", host.facts}};
}

void read_fields(const JsonFields& fields, UpHost& host) {
  fields.read("name", host.name);
  fields.read("provider", host.provider);
  fields.read("address", host.address);
  fields.read("facts", host.facts);
}

void to_json(json& out, const AttachedRunNote& note) {
  out = {{"run_dir", note.run_dir}, {"started", note.started}, {"status", note.status}};
}

void read_fields(const JsonFields& fields, AttachedRunNote& note) {
  fields.read("run_dir", note.run_dir);
  fields.read("started", note.started);
  fields.read("status", note.status);
}

namespace {

template <typename T>
void put_if_set(json& out, const char* key, const std::optional<T>& value) {
  if (value) {
    out[key] = *value;
  }
}

}  // namespace

void to_json(json& out, const UpState& state) {
  out = {{"scenario", state.scenario}, {"name", state.name},   {"run_token", state.run_token},
         {"run_dir", state.run_dir},   {"hosts", state.hosts}, {"instances", state.instances}};
  put_if_set(out, "up_since", state.up_since);
  put_if_set(out, "emulator_kind", state.emulator_kind);
  put_if_set(out, "log_dir", state.log_dir);
  put_if_set(out, "log_dir_created", state.log_dir_created);
  put_if_set(out, "instance_files", state.instance_files);
  put_if_set(out, "attached_runs", state.attached_runs);
  put_if_set(out, "last_attached_run", state.last_attached_run);
  put_if_set(out, "instances_restarted", state.instances_restarted);
}

void read_fields(const JsonFields& fields, UpState& state) {
  fields.read("scenario", state.scenario);
  fields.read("name", state.name);
  fields.read("run_token", state.run_token);
  fields.read("run_dir", state.run_dir);
  fields.read("up_since", state.up_since);
  fields.read("emulator_kind", state.emulator_kind);
  fields.read("hosts", state.hosts);
  fields.read("instances", state.instances);
  fields.read("log_dir", state.log_dir);
  fields.read("log_dir_created", state.log_dir_created);
  fields.read("instance_files", state.instance_files);
  fields.read("attached_runs", state.attached_runs);
  fields.read("last_attached_run", state.last_attached_run);
  fields.read("instances_restarted", state.instances_restarted);
}

std::string up_state_text(const UpState& state) {
  return json(state).dump(2) + "\n";
}

UpState parse_up_state(std::string_view text, const std::string& file) {
  UpState state;
  read_fields(JsonFields(parse_json_file_text(text, file), file), state);
  return state;
}

std::optional<UpState> read_up_state(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) {
    return std::nullopt;
  }
  std::stringstream text;
  text << in.rdbuf();
  return parse_up_state(text.str(), path.string());
}

void write_up_state(const std::filesystem::path& path, const UpState& state) {
  write_file_durably(path, up_state_text(state), {.durability = Durability::kRecord});
}

void write_instance_manifest(const std::filesystem::path& path, const InstanceManifest& manifest) {
  write_file_durably(path, instance_manifest_text(manifest), {.durability = Durability::kRecord});
}

}  // namespace ernic
