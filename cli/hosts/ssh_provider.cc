#include "hosts/ssh_provider.h"

#include <fmt/format.h>

#include <cstdlib>
#include <mutex>
#include <thread>

#include "common/units.h"
#include "hosts/ssh_host.h"
#include "run/status.h"

namespace ernic {
namespace {

FieldSchema field(std::string name, ValueKind kind, std::string description) {
  FieldSchema result;
  result.name = std::move(name);
  result.kind = kind;
  result.description = std::move(description);
  return result;
}

std::shared_ptr<const ObjectSchema> endpoint_schema(bool jump) {
  auto schema = std::make_shared<ObjectSchema>();
  schema->description =
      jump ? "A jump host (like OpenSSH's ProxyJump): the connection to the host is tunnelled "
             "through it"
           : "How to log in to the host over SSH";
  FieldSchema host = field("host", ValueKind::kString,
                           jump ? "Jump host name or address"
                                : "Name or address to connect to; defaults to the host's address");
  host.required = jump;
  FieldSchema port = field("port", ValueKind::kInteger, "TCP port of sshd");
  port.minimum = 1;
  port.maximum = 65535;
  port.default_text = "22";
  FieldSchema user = field("user", ValueKind::kString, "User to log in as");
  user.default_text = "the local user";
  FieldSchema key = field("key", ValueKind::kString,
                          "Private key file; without it the SSH agent, then ~/.ssh/id_* are tried");
  schema->fields = {host, port, user, key};
  return schema;
}

const ObjectSchema& build_host_schema() {
  static const ObjectSchema schema = [] {
    auto ssh = std::make_shared<ObjectSchema>(*endpoint_schema(false));
    FieldSchema known_hosts = field("known_hosts", ValueKind::kString,
                                    "known_hosts file the host key is verified against");
    known_hosts.default_text = "~/.ssh/known_hosts";
    FieldSchema policy =
        field("host_key_policy", ValueKind::kEnum,
              "strict: the key must be in known_hosts; accept-new: unknown keys are "
              "added, changed keys refused; ignore: no verification (prints a warning)");
    policy.enum_values = {"strict", "accept-new", "ignore"};
    policy.default_text = "strict";
    FieldSchema jump = field("jump", ValueKind::kObject, "Reach the host through this jump host");
    jump.object = endpoint_schema(true);
    FieldSchema connect_timeout = field("connect_timeout", ValueKind::kDuration,
                                        "Limit for connecting, key exchange and authentication");
    connect_timeout.default_text = "10s";
    FieldSchema keepalive = field("keepalive", ValueKind::kDuration,
                                  "Interval of SSH and TCP keepalives; 0 turns them off");
    keepalive.default_text = "5s";
    FieldSchema alive_timeout =
        field("alive_timeout", ValueKind::kDuration,
              "A host that does not run `true` within this is declared gone "
              "and the run stops");
    alive_timeout.default_text = "5s";
    ssh->fields.insert(ssh->fields.end(),
                       {known_hosts, policy, jump, connect_timeout, keepalive, alive_timeout});
    FieldSchema ssh_field = field("ssh", ValueKind::kObject, "SSH connection settings");
    ssh_field.object = ssh;
    FieldSchema facts = field("facts", ValueKind::kStringMap,
                              "Facts known in advance, e.g. sysfs_root, rdma_device, gid_index");
    return ObjectSchema{"A machine or guest that already exists, reached over SSH",
                        {ssh_field, facts}};
  }();
  return schema;
}

std::string expand_home(const std::string& path) {
  if (path.rfind("~/", 0) == 0) {
    const char* home = std::getenv("HOME");
    return std::string(home != nullptr ? home : "/root") + path.substr(1);
  }
  return path;
}

class EntryReader {
 public:
  EntryReader(const std::string& host_name, std::string prefix)
      : host_name_(host_name), prefix_(std::move(prefix)) {}

  std::string text(const YAML::Node& node, const std::string& key, std::string fallback) const {
    if (!node || !node[key]) {
      return fallback;
    }
    if (!node[key].IsScalar()) {
      fail(key, "expected a string");
    }
    return node[key].Scalar();
  }

  std::uint16_t port(const YAML::Node& node) const {
    std::string value = text(node, "port", "22");
    char* end = nullptr;
    long number = std::strtol(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0' || number < 1 || number > 65535) {
      fail("port", "expected a TCP port 1..65535, found '" + value + "'");
    }
    return static_cast<std::uint16_t>(number);
  }

  std::chrono::milliseconds duration(const YAML::Node& node, const std::string& key,
                                     const char* fallback) const {
    std::string value = text(node, key, fallback);
    auto parsed = parse_duration(value);
    if (!parsed || parsed->count() < 0) {
      fail(key, "expected a duration such as 10s, found '" + value + "'");
    }
    return std::chrono::duration_cast<std::chrono::milliseconds>(*parsed);
  }

  SshEndpoint endpoint(const YAML::Node& node, std::string default_host) const {
    SshEndpoint endpoint;
    endpoint.host = text(node, "host", std::move(default_host));
    if (endpoint.host.empty()) {
      fail("host", "no address to connect to: give the host an address or ssh.host");
    }
    endpoint.port = port(node);
    endpoint.user = text(node, "user", "");
    endpoint.key = expand_home(text(node, "key", ""));
    return endpoint;
  }

  [[noreturn]] void fail(const std::string& key, const std::string& message) const {
    throw SshError(fmt::format("host {}: {}{}: {}", host_name_, prefix_, key, message));
  }

 private:
  const std::string& host_name_;
  std::string prefix_;
};

}  // namespace

SshConnectOptions ssh_options_from_spec(const HostSpec& spec) {
  YAML::Node ssh = spec.config ? spec.config["ssh"] : YAML::Node();
  EntryReader reader(spec.name, "ssh.");
  SshConnectOptions options;
  options.label = spec.name;
  options.target = reader.endpoint(ssh, spec.address);
  options.known_hosts = expand_home(reader.text(ssh, "known_hosts", ""));
  std::string policy = reader.text(ssh, "host_key_policy", "strict");
  auto parsed_policy = parse_host_key_policy(policy);
  if (!parsed_policy) {
    reader.fail("host_key_policy", "expected strict, accept-new or ignore, found '" + policy + "'");
  }
  options.host_key_policy = *parsed_policy;
  if (ssh && ssh["jump"]) {
    options.jump = EntryReader(spec.name, "ssh.jump.").endpoint(ssh["jump"], "");
  }
  options.connect_timeout = reader.duration(ssh, "connect_timeout", "10s");
  options.keepalive = reader.duration(ssh, "keepalive", "5s");
  options.alive_timeout = reader.duration(ssh, "alive_timeout", "5s");
  if (options.connect_timeout.count() == 0) {
    reader.fail("connect_timeout", "must be more than 0");
  }
  if (options.alive_timeout.count() == 0) {
    reader.fail("alive_timeout", "must be more than 0");
  }
  return options;
}

std::string_view SshProvider::description() const {
  return "Machines and guests that already exist, reached over SSH (libssh): key or agent "
         "authentication, known_hosts verification, optional jump host";
}

const ObjectSchema& SshProvider::host_schema() const {
  return build_host_schema();
}

std::vector<std::string> SshProvider::planned_addresses(const std::vector<HostSpec>& hosts,
                                                        const YAML::Node& /*scenario*/) const {
  std::vector<std::string> addresses;
  for (const HostSpec& spec : hosts) {
    std::string address = spec.address;
    if (address.empty() && spec.config && spec.config["ssh"] && spec.config["ssh"]["host"]) {
      address = spec.config["ssh"]["host"].Scalar();
    }
    addresses.push_back(address);
  }
  return addresses;
}

void SshProvider::check(const std::vector<HostSpec>& hosts, const YAML::Node& /*scenario*/,
                        const std::string& file, Diagnostics& out) const {
  for (const HostSpec& spec : hosts) {
    try {
      ssh_options_from_spec(spec);
    } catch (const SshError& error) {
      Diagnostic diagnostic;
      diagnostic.file = file;
      if (spec.config) {
        YAML::Mark mark = spec.config.Mark();
        diagnostic.line = mark.line >= 0 ? mark.line + 1 : 0;
        diagnostic.column = mark.column >= 0 ? mark.column + 1 : 0;
      }
      diagnostic.path = "hosts." + spec.name;
      diagnostic.message = error.what();
      out.push_back(std::move(diagnostic));
    }
  }
}

std::vector<std::string> SshProvider::describe(const std::vector<HostSpec>& hosts,
                                               const ProviderContext& /*context*/) const {
  std::vector<std::string> lines;
  for (const HostSpec& spec : hosts) {
    SshConnectOptions options = ssh_options_from_spec(spec);
    std::string via = options.jump ? " via " + options.jump->display() : "";
    lines.push_back(fmt::format(
        "ssh {}{} as {} (key {}, known_hosts {}, host_key_policy {}, connect_timeout {}, "
        "keepalive {})",
        options.target.display(), via, spec.name,
        options.target.key.empty() ? "agent or ~/.ssh/id_*" : options.target.key.string(),
        options.known_hosts.empty() ? "~/.ssh/known_hosts" : options.known_hosts.string(),
        host_key_policy_name(options.host_key_policy),
        format_duration_short(options.connect_timeout), format_duration_short(options.keepalive)));
  }
  return lines;
}

std::vector<std::unique_ptr<Host>> SshProvider::create(const std::vector<HostSpec>& hosts,
                                                       ProviderContext& context) {
  std::vector<SshConnectOptions> options;
  options.reserve(hosts.size());
  for (const HostSpec& spec : hosts) {
    options.push_back(ssh_options_from_spec(spec));
    if (context.status != nullptr) {
      options.back().warn = [status = context.status](const std::string& message) {
        status->warning(message);
      };
    }
  }
  std::vector<std::unique_ptr<Host>> created(hosts.size());
  std::vector<std::string> errors(hosts.size());
  {
    // Connecting costs a key exchange per host (about a second into a TCG guest): in parallel.
    std::vector<std::jthread> workers;
    for (std::size_t i = 0; i < hosts.size(); ++i) {
      workers.emplace_back([&, i] {
        try {
          std::string address =
              hosts[i].address.empty() ? options[i].target.host : hosts[i].address;
          created[i] = std::make_unique<SshHost>(hosts[i].name, address, options[i]);
        } catch (const std::exception& error) {
          errors[i] = error.what();
        }
      });
    }
  }
  std::string failures;
  for (const std::string& error : errors) {
    if (!error.empty()) {
      failures += (failures.empty() ? "" : "; ") + error;
    }
  }
  if (!failures.empty()) {
    throw SshError(failures);
  }
  return created;
}

HostProvider& ssh_host_provider() {
  static SshProvider provider;
  return provider;
}

}  // namespace ernic
