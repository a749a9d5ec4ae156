// STATE_DIR/up.json as C++ types: what `ernicctl up` left running, read back by status, logs,
// stats, ssh, down, `up --restart-instances` and `run --attach`. One reader and one writer;
// the bytes written are those ernicctl wrote before these types existed, so a state left by an
// earlier ernicctl is read, and rewritten, as it was.
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/json_fields.h"
#include "emulators/instance_manifest.h"

namespace ernic {

// A host `up` created, with the facts its Host gave and setup learned (a guest's key, a
// namespace's name, the instance it is attached to).
struct UpHost {
  std::string name;
  std::string provider;
  std::string address;
  std::map<std::string, std::string> facts;

  // The fact, or "" without it.
  std::string fact(const std::string& name) const;
};

// The last `run --attach` that used what is up.
struct AttachedRunNote {
  std::string run_dir;
  std::string started;  // ISO 8601
  std::string status;   // passed | failed | incomplete
};

struct UpState {
  std::string scenario;  // the scenario file, absolute
  std::string name;      // the scenario's name
  std::string run_token;
  std::string run_dir;
  // Absent in states written before they were recorded; kept absent when written back.
  std::optional<std::string> up_since;  // ISO 8601
  std::optional<std::string> emulator_kind;
  std::vector<UpHost> hosts;
  std::vector<ManifestInstance> instances;  // as in instances.json
  // Where the instances' logs are linked, whether `up` created that folder, and the links it
  // made (`down` removes exactly them).
  std::optional<std::string> log_dir;
  std::optional<bool> log_dir_created;
  std::optional<std::vector<std::string>> instance_files;
  // Written once a `run --attach` or `up --restart-instances` happened.
  std::optional<int> attached_runs;
  std::optional<AttachedRunNote> last_attached_run;
  std::optional<int> instances_restarted;

  const UpHost* find_host(const std::string& host_name) const;
  const ManifestInstance* find_instance(int id) const;
};

void to_json(nlohmann::json& json, const UpHost& host);
void to_json(nlohmann::json& json, const AttachedRunNote& note);
void to_json(nlohmann::json& json, const UpState& state);
void read_fields(const JsonFields& fields, UpHost& host);
void read_fields(const JsonFields& fields, AttachedRunNote& note);
void read_fields(const JsonFields& fields, UpState& state);

// The file's text: two-space-indented JSON, keys sorted, and a newline.
std::string up_state_text(const UpState& state);
// Throws JsonFieldError naming `file` and the path of a mistyped field ("up.json:
// instances[1].pid: expected a number, not string").
UpState parse_up_state(std::string_view text, const std::string& file);
// The state at `path`, or nullopt when there is none; throws as parse_up_state does.
std::optional<UpState> read_up_state(const std::filesystem::path& path);
// Replaces `path` by write_file_durably as a record: a reader or a crash sees the old state or
// the new one, never half of one.
void write_up_state(const std::filesystem::path& path, const UpState& state);
void write_instance_manifest(const std::filesystem::path& path, const InstanceManifest& manifest);

}  // namespace ernic
