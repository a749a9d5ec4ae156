// The `netns` provider: hosts are network namespaces on this machine, joined by a veth pair
// (two hosts) or a bridge in a hub namespace of their own (more), so a laptop or a CI machine
// gets real traffic between hosts without VMs and without touching the host's own network.
#include <arpa/inet.h>
#include <fmt/format.h>
#include <signal.h>

#include <filesystem>
#include <set>
#include <sstream>

#include "hosts/local_host.h"
#include "hosts/process_command.h"
#include "hosts/provider.h"
#include "hosts/registry.h"

namespace ernic {
namespace {

constexpr const char* kDefaultSubnet = "10.77.0.0/24";

struct Subnet {
  std::uint32_t base = 0;  // host order
  int length = 24;
};

Subnet parse_subnet(const std::string& cidr) {
  Subnet subnet;
  auto slash = cidr.find('/');
  in_addr address{};
  ::inet_pton(AF_INET, cidr.substr(0, slash).c_str(), &address);
  subnet.length = std::stoi(cidr.substr(slash + 1));
  std::uint32_t mask = subnet.length == 0 ? 0 : ~0u << (32 - subnet.length);
  subnet.base = ntohl(address.s_addr) & mask;
  return subnet;
}

std::string format_ipv4(std::uint32_t host_order) {
  in_addr address{htonl(host_order)};
  char text[INET_ADDRSTRLEN];
  ::inet_ntop(AF_INET, &address, text, sizeof text);
  return text;
}

std::string subnet_of(const Config& scenario) {
  return scenario.object("netns").text("subnet", kDefaultSubnet);
}

bool use_bridge(const std::vector<HostSpec>& hosts, const Config& scenario) {
  std::string link = scenario.object("netns").text("link", "auto");
  return link == "bridge" || (link == "auto" && hosts.size() != 2);
}

// Namespace names carry the run token so concurrent runs never collide, and the `ernic-`
// prefix lets `ernicctl down` find leftovers of a killed run.
std::string namespace_name(const std::string& token, const std::string& host) {
  std::string safe;
  for (char c : host) {
    safe += std::isalnum(static_cast<unsigned char>(c)) ? c : '-';
  }
  return fmt::format("ernic-{}-{}", token, safe);
}

void kill_namespace_processes(const std::string& ns) {
  std::string pids;
  try {
    pids = run_or_throw({"ip", "netns", "pids", ns});
  } catch (const std::exception&) {
    return;
  }
  std::istringstream stream(pids);
  for (pid_t pid; stream >> pid;) {
    ::kill(pid, SIGKILL);
  }
}

class NetnsProvider final : public HostProvider {
 public:
  std::string_view name() const override { return "netns"; }
  std::string_view description() const override {
    return "A network namespace on this machine, created and removed by ernicctl";
  }
  // Up while its namespace (the `netns` fact) exists.
  std::string host_condition(const std::map<std::string, std::string>& facts) const override {
    auto netns = facts.find("netns");
    if (netns == facts.end()) {
      return "unknown";
    }
    return std::filesystem::exists("/run/netns/" + netns->second) ? "up" : "gone";
  }
  const ObjectSchema& host_schema() const override {
    static const ObjectSchema schema{.description = "", .fields = {}};
    return schema;
  }
  const ObjectSchema* settings_schema() const override {
    static const ObjectSchema schema{
        .description = "How netns hosts are joined",
        .fields = {{.name = "subnet",
                    .kind = ValueKind::kCidr,
                    .description = "Addresses of the hosts; they live only inside the namespaces",
                    .default_text = kDefaultSubnet},
                   {.name = "link",
                    .kind = ValueKind::kEnum,
                    .description = "veth: one pair (exactly two hosts); bridge: a bridge in a hub "
                                   "namespace; auto: veth for two hosts, else bridge",
                    .enum_values = {"auto", "veth", "bridge"},
                    .default_text = "auto"}}};
    return &schema;
  }

  std::vector<std::string> planned_addresses(const std::vector<HostSpec>& hosts,
                                             const Config& scenario) const override {
    Subnet subnet = parse_subnet(subnet_of(scenario));
    std::vector<std::string> addresses;
    for (std::size_t i = 0; i < hosts.size(); ++i) {
      addresses.push_back(hosts[i].address.empty()
                              ? format_ipv4(subnet.base + static_cast<std::uint32_t>(i) + 1)
                              : hosts[i].address);
    }
    return addresses;
  }

  void check(const std::vector<HostSpec>& hosts, const Config& scenario,
             Diagnostics& out) const override {
    std::string cidr = subnet_of(scenario);
    Subnet subnet = parse_subnet(cidr);
    std::uint64_t capacity = (1ull << (32 - subnet.length)) - 2;
    const Config settings = scenario.object("netns");
    if (hosts.size() > capacity) {
      Diagnostic problem = settings.has("subnet") ? settings.diagnostic("subnet", "")
                                                  : scenario.diagnostic("hosts", "");
      problem.message = fmt::format("subnet {} has room for {} hosts, the scenario has {}", cidr,
                                    capacity, hosts.size());
      out.push_back(std::move(problem));
    }
    if (settings.text("link", "auto") == "veth" && hosts.size() != 2) {
      out.push_back(settings.diagnostic("link", fmt::format("a veth pair joins exactly two hosts, "
                                                            "the scenario has {} netns hosts; "
                                                            "use bridge",
                                                            hosts.size())));
    }
    std::set<std::string> seen;
    auto addresses = planned_addresses(hosts, scenario);
    std::uint32_t mask = subnet.length == 0 ? 0 : ~0u << (32 - subnet.length);
    for (std::size_t i = 0; i < hosts.size(); ++i) {
      in_addr address{};
      ::inet_pton(AF_INET, addresses[i].c_str(), &address);
      if ((ntohl(address.s_addr) & mask) != subnet.base) {
        out.push_back(hosts[i].config.diagnostic(
            "address", fmt::format("{} is outside the netns subnet {}", addresses[i], cidr)));
      }
      if (!seen.insert(addresses[i]).second) {
        out.push_back(hosts[i].config.diagnostic(
            "address",
            fmt::format("address {} of host {} is used twice", addresses[i], hosts[i].name)));
      }
    }
  }

  bool shares_this_filesystem() const override { return true; }
  std::vector<Program> programs() const override { return {{"ip", "iproute2"}}; }
  bool acts_only_through_runner() const override { return true; }

  std::vector<std::unique_ptr<Host>> create(const std::vector<HostSpec>& hosts,
                                            ProviderContext& context) override {
    CleanupStack& cleanup = *context.cleanup;
    auto run = [&context](const std::vector<std::string>& argv) {
      CommandSpec spec{.argv = argv, .timeout = std::chrono::seconds(30), .env = {}};
      CommandResult result = context.runner->run_here(spec);
      if (!result.ok()) {
        throw std::runtime_error(
            fmt::format("{} failed ({}): {}", spec.display(), result.describe(), result.err));
      }
    };
    auto namespaces = namespace_names(hosts, context);
    for (const auto& ns : namespaces) {
      run({"ip", "netns", "add", ns});
      // Pushed right after the namespace exists: whatever fails next, it goes away.
      cleanup.push(fmt::format("remove network namespace {}", ns), [ns] {
        kill_namespace_processes(ns);
        run_or_throw({"ip", "netns", "delete", ns});
      });
    }
    for (const auto& step : plumbing(hosts, context)) {
      if (step[1] == "netns" && step[2] == "add") {
        continue;
      }
      run(step);
    }
    auto addresses = planned_addresses(hosts, context.scenario);
    std::vector<std::unique_ptr<Host>> created;
    for (std::size_t i = 0; i < hosts.size(); ++i) {
      created.push_back(std::make_unique<LocalHost>(
          hosts[i].name, addresses[i], namespace_name(context.run_token, hosts[i].name)));
    }
    return created;
  }

  std::vector<std::unique_ptr<Host>> attach(const std::vector<HostSpec>& hosts,
                                            const std::vector<AttachedHost>& recorded,
                                            ProviderContext& /*context*/) override {
    std::vector<std::unique_ptr<Host>> attached;
    for (std::size_t i = 0; i < hosts.size(); ++i) {
      auto ns = recorded[i].facts.find("netns");
      if (ns == recorded[i].facts.end() || host_condition(recorded[i].facts) != "up") {
        throw std::runtime_error(fmt::format(
            "host {}: its network namespace {} is gone", hosts[i].name,
            ns == recorded[i].facts.end() ? std::string("(not recorded)") : ns->second));
      }
      attached.push_back(
          std::make_unique<LocalHost>(hosts[i].name, recorded[i].address, ns->second));
    }
    return attached;
  }

 private:
  std::vector<std::string> namespace_names(const std::vector<HostSpec>& hosts,
                                           const ProviderContext& context) const {
    std::vector<std::string> names;
    for (const auto& host : hosts) {
      names.push_back(namespace_name(context.run_token, host.name));
    }
    if (use_bridge(hosts, context.scenario)) {
      names.push_back(namespace_name(context.run_token, "hub"));
    }
    return names;
  }

  // Every `ip` command that builds the network, in order.
  std::vector<std::vector<std::string>> plumbing(const std::vector<HostSpec>& hosts,
                                                 const ProviderContext& context) const {
    std::vector<std::vector<std::string>> steps;
    auto names = namespace_names(hosts, context);
    for (const auto& ns : names) {
      steps.push_back({"ip", "netns", "add", ns});
      steps.push_back({"ip", "-n", ns, "link", "set", "lo", "up"});
    }
    auto addresses = planned_addresses(hosts, context.scenario);
    std::string length = std::to_string(parse_subnet(subnet_of(context.scenario)).length);
    if (!use_bridge(hosts, context.scenario)) {
      steps.push_back({"ip", "-n", names[0], "link", "add", "eth1", "type", "veth", "peer", "name",
                       "eth1", "netns", names[1]});
    } else {
      const std::string& hub = names.back();
      steps.push_back({"ip", "-n", hub, "link", "add", "br0", "type", "bridge"});
      steps.push_back({"ip", "-n", hub, "link", "set", "br0", "up"});
      for (std::size_t i = 0; i < hosts.size(); ++i) {
        std::string port = fmt::format("port{}", i);
        steps.push_back({"ip", "-n", names[i], "link", "add", "eth1", "type", "veth", "peer",
                         "name", port, "netns", hub});
        steps.push_back({"ip", "-n", hub, "link", "set", port, "master", "br0", "up"});
      }
    }
    for (std::size_t i = 0; i < hosts.size(); ++i) {
      steps.push_back(
          {"ip", "-n", names[i], "addr", "add", addresses[i] + "/" + length, "dev", "eth1"});
      steps.push_back({"ip", "-n", names[i], "link", "set", "eth1", "up"});
    }
    return steps;
  }
};

}  // namespace

HostProvider& netns_provider() {
  static NetnsProvider provider;
  return provider;
}

}  // namespace ernic
