// The instance manifest: the emulator instances a run started, in the format of rocm-ernic's
// service layer ($ERNIC_RUN_DIR/instances.json, whose `instances[].pid` their CI helper checks
// alive and whose `instances[].id` and `vm.{vm_name,ssh_port,ssh_user}` their playbooks read).
// `ernicctl up` writes it beside up.json, whose `instances` hold the same entries. One writer
// and one reader: the bytes written are those ernicctl wrote before these types existed.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/json_fields.h"
#include "hosts/ssh/ssh_connection.h"

namespace ernic {

// The guest `up` attached to an instance (`vm`); the emulator kinds write only `attached`.
struct InstanceGuest {
  bool attached = false;
  std::optional<std::string> vm_name;  // the libvirt domain, else the scenario's host name
  std::optional<int> ssh_port;
  std::optional<std::string> ssh_user;
  std::optional<std::string> address;
};

// An instance `ernicctl up` left running on another machine (the `remote` object of its entry
// beside id, role, pid, socket): enough for status, `run --attach` and down to log in again.
struct RemoteInstance {
  int id = 0;
  std::string role;
  pid_t pid = 0;  // also its process group (started by setsid)
  std::string socket;
  std::string on;  // the scenario's host
  std::string address;
  std::string dir;  // the run's directory there: token file, log, stats (and a copied ernicctl)
  std::string log;
  std::string stats;
  std::string token_file;
  SshConnectOptions ssh;  // how `up` reached it

  // "instance 2 (worker on B, pid 123)"
  std::string describe() const;
};

struct ManifestInstance {
  int id = 0;  // 1 = the manager
  std::string role;
  std::optional<std::string> on;  // where it runs: a host of the scenario, or "local"
  pid_t pid = 0;                  // on its machine
  std::string mac;
  std::string socket;
  // ERNIC_TCP_GUEST_GIDS as the external kind passes it, or the embedded kind's list.
  std::variant<std::string, std::vector<std::string>> gids;
  std::string log;
  std::string stats;
  std::optional<InstanceGuest> vm;
  // Its id, role, pid and socket are the entry's; the file holds the rest only.
  std::optional<RemoteInstance> remote;

  // "instance 2 (worker, pid 123)"
  std::string describe() const;
};

struct InstanceManifest {
  std::vector<ManifestInstance> instances;
};

void read_fields(const JsonFields& fields, InstanceGuest& guest);
void to_json(nlohmann::json& json, const ManifestInstance& instance);
void to_json(nlohmann::json& json, const InstanceManifest& manifest);
void read_fields(const JsonFields& fields, ManifestInstance& instance);
void read_fields(const JsonFields& fields, InstanceManifest& manifest);

// The file's text: two-space-indented JSON, keys sorted, and a newline.
std::string instance_manifest_text(const InstanceManifest& manifest);
// Throws JsonFieldError naming `file` and the path of a mistyped field.
InstanceManifest parse_instance_manifest(std::string_view text, const std::string& file);

}  // namespace ernic
