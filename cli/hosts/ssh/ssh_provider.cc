#include "hosts/ssh/ssh_provider.h"

#include <fmt/format.h>

#include <cstdlib>
#include <mutex>
#include <thread>

#include "base/status.h"
#include "base/units.h"
#include "hosts/ssh/ssh_host.h"

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
    FieldSchema jump_known_hosts =
        field("jump_known_hosts", ValueKind::kString,
              "known_hosts file the jump host's key is verified against (under host_key_policy)");
    jump_known_hosts.default_text = "known_hosts";
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
    ssh->fields.insert(ssh->fields.end(), {known_hosts, policy, jump, jump_known_hosts,
                                           connect_timeout, keepalive, alive_timeout});
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

// Reads an `ssh:` or `ssh.jump:` block; what the schema cannot say is refused naming the key.
class EntryReader {
 public:
  EntryReader(const std::string& host_name, std::string prefix)
      : host_name_(host_name), prefix_(std::move(prefix)) {}

  SshEndpoint endpoint(const Config& block, std::string default_host) const {
    SshEndpoint endpoint;
    endpoint.host = block.text("host", std::move(default_host));
    if (endpoint.host.empty()) {
      fail("host", "no address to connect to: give the host an address or ssh.host");
    }
    endpoint.port = static_cast<std::uint16_t>(block.integer("port", 22));
    endpoint.user = block.text("user", "");
    endpoint.key = expand_home(block.text("key", ""));
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
  const Config ssh = spec.config.object("ssh");
  EntryReader reader(spec.name, "ssh.");
  SshConnectOptions options;
  options.label = spec.name;
  options.target = reader.endpoint(ssh, spec.address);
  options.known_hosts = expand_home(ssh.text("known_hosts", ""));
  // The schema's enum holds exactly the policies there are.
  options.host_key_policy = *parse_host_key_policy(ssh.text("host_key_policy", "strict"));
  if (ssh.has("jump")) {
    options.jump = EntryReader(spec.name, "ssh.jump.").endpoint(ssh.object("jump"), "");
    options.jump_known_hosts = expand_home(ssh.text("jump_known_hosts", ""));
  } else if (ssh.has("jump_known_hosts")) {
    reader.fail("jump_known_hosts", "given without ssh.jump: there is no jump host to verify");
  }
  options.connect_timeout = ssh.duration("connect_timeout", std::chrono::seconds(10));
  options.keepalive = ssh.duration("keepalive", std::chrono::seconds(5));
  options.alive_timeout = ssh.duration("alive_timeout", std::chrono::seconds(5));
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
                                                        const Config& /*scenario*/) const {
  std::vector<std::string> addresses;
  for (const HostSpec& spec : hosts) {
    addresses.push_back(spec.address.empty() ? spec.config.object("ssh").text("host", "")
                                             : spec.address);
  }
  return addresses;
}

std::string SshProvider::machine_of(const HostSpec& host) const {
  return host.config.object("ssh").text("host", host.address);
}

void SshProvider::check(const std::vector<HostSpec>& hosts, const Config& /*scenario*/,
                        Diagnostics& out) const {
  for (const HostSpec& spec : hosts) {
    try {
      ssh_options_from_spec(spec);
    } catch (const SshError& error) {
      out.push_back(spec.config.diagnostic("ssh", error.what()));
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
