#include "emulators/instance_manifest.h"

#include <fmt/format.h>

namespace ernic {
using nlohmann::json;

namespace {

json endpoint_json(const SshEndpoint& endpoint) {
  return {{"host", endpoint.host},
          {"port", endpoint.port},
          {"user", endpoint.user},
          {"key", endpoint.key.string()}};
}

SshEndpoint read_endpoint(const JsonFields& fields) {
  SshEndpoint endpoint;
  fields.require("host", endpoint.host);
  fields.require("port", endpoint.port);
  fields.read("user", endpoint.user);
  std::string key;
  fields.read("key", key);
  endpoint.key = key;
  return endpoint;
}

json ssh_json(const SshConnectOptions& options) {
  json record = {{"target", endpoint_json(options.target)},
                 {"known_hosts", options.known_hosts.string()},
                 {"jump_known_hosts", options.jump_known_hosts.string()},
                 {"host_key_policy", host_key_policy_name(options.host_key_policy)},
                 {"connect_timeout_ms", options.connect_timeout.count()},
                 {"keepalive_ms", options.keepalive.count()},
                 {"alive_timeout_ms", options.alive_timeout.count()}};
  if (options.jump) {
    record["jump"] = endpoint_json(*options.jump);
  }
  return record;
}

// A field in milliseconds, kept at `out`'s default when missing.
void read_milliseconds(const JsonFields& fields, const char* key, std::chrono::milliseconds& out) {
  std::int64_t count = out.count();
  fields.read(key, count);
  out = std::chrono::milliseconds(count);
}

SshConnectOptions read_ssh(const JsonFields& fields, const std::string& label) {
  SshConnectOptions options;
  options.label = label;
  options.target = read_endpoint(fields.child("target"));
  if (fields.has("jump")) {
    options.jump = read_endpoint(fields.child("jump"));
  }
  std::string known_hosts;
  std::string jump_known_hosts;
  fields.read("known_hosts", known_hosts);
  fields.read("jump_known_hosts", jump_known_hosts);
  options.known_hosts = known_hosts;
  options.jump_known_hosts = jump_known_hosts;
  std::string policy(host_key_policy_name(options.host_key_policy));
  fields.read("host_key_policy", policy);
  auto parsed = parse_host_key_policy(policy);
  if (!parsed) {
    fields.fail(fields.path() + ".host_key_policy",
                fmt::format("'{}' is not strict, accept-new or ignore", policy));
  }
  options.host_key_policy = *parsed;
  read_milliseconds(fields, "connect_timeout_ms", options.connect_timeout);
  read_milliseconds(fields, "keepalive_ms", options.keepalive);
  read_milliseconds(fields, "alive_timeout_ms", options.alive_timeout);
  return options;
}

json remote_json(const RemoteInstance& remote) {
  return {{"host", remote.on},          {"address", remote.address},
          {"dir", remote.dir},          {"log", remote.log},
          {"stats", remote.stats},      {"token_file", remote.token_file},
          {"ssh", ssh_json(remote.ssh)}};
}

// The `remote` object; the entry's own fields are filled in by its reader.
RemoteInstance read_remote(const JsonFields& fields) {
  RemoteInstance remote;
  fields.require("host", remote.on);
  fields.read("address", remote.address);
  fields.require("dir", remote.dir);
  fields.read("log", remote.log);
  fields.read("stats", remote.stats);
  fields.read("token_file", remote.token_file);
  remote.ssh = read_ssh(fields.child("ssh"), remote.on);
  return remote;
}

json guest_json(const InstanceGuest& guest) {
  json vm = {{"attached", guest.attached}};
  if (guest.vm_name) {
    vm["vm_name"] = *guest.vm_name;
  }
  if (guest.ssh_port) {
    vm["ssh_port"] = *guest.ssh_port;
  }
  if (guest.ssh_user) {
    vm["ssh_user"] = *guest.ssh_user;
  }
  if (guest.address) {
    vm["address"] = *guest.address;
  }
  return vm;
}

}  // namespace

void read_fields(const JsonFields& fields, InstanceGuest& guest) {
  fields.read("attached", guest.attached);
  fields.read("vm_name", guest.vm_name);
  fields.read("ssh_port", guest.ssh_port);
  fields.read("ssh_user", guest.ssh_user);
  fields.read("address", guest.address);
}

std::string RemoteInstance::describe() const {
  return fmt::format("instance {} ({} on {}, pid {})", id, role, on, pid);
}

std::string ManifestInstance::describe() const {
  return fmt::format("instance {} ({}, pid {})", id, role.empty() ? "?" : role, pid);
}

void to_json(json& out, const ManifestInstance& instance) {
  out = {{"id", instance.id},      {"role", instance.role},     {"pid", instance.pid},
         {"mac", instance.mac},    {"socket", instance.socket}, {"log", instance.log},
         {"stats", instance.stats}};
  std::visit([&](const auto& gids) { out["gids"] = gids; }, instance.gids);
  if (instance.on) {
    out["on"] = *instance.on;
  }
  if (instance.vm) {
    out["vm"] = guest_json(*instance.vm);
  }
  if (instance.remote) {
    out["remote"] = remote_json(*instance.remote);
  }
}

void read_fields(const JsonFields& fields, ManifestInstance& instance) {
  fields.read("id", instance.id);
  fields.read("role", instance.role);
  fields.read("on", instance.on);
  fields.read("pid", instance.pid);
  fields.read("mac", instance.mac);
  fields.read("socket", instance.socket);
  if (const json* gids = fields.find("gids"); gids != nullptr && gids->is_string()) {
    instance.gids = gids->get<std::string>();
  } else {
    std::vector<std::string> list;
    fields.read("gids", list);
    instance.gids = std::move(list);
  }
  fields.read("log", instance.log);
  fields.read("stats", instance.stats);
  fields.read("vm", instance.vm);
  if (fields.has("remote")) {
    RemoteInstance remote = read_remote(fields.child("remote"));
    remote.id = instance.id;
    remote.role = instance.role;
    remote.pid = instance.pid;
    remote.socket = instance.socket;
    instance.remote = std::move(remote);
  }
}

void to_json(json& out, const InstanceManifest& manifest) {
  out = {{"instances", manifest.instances}};
}

void read_fields(const JsonFields& fields, InstanceManifest& manifest) {
  fields.read("instances", manifest.instances);
}

std::string instance_manifest_text(const InstanceManifest& manifest) {
  return json(manifest).dump(2) + "\n";
}

InstanceManifest parse_instance_manifest(std::string_view text, const std::string& file) {
  InstanceManifest manifest;
  read_fields(JsonFields(parse_json_file_text(text, file), file), manifest);
  return manifest;
}

}  // namespace ernic
