// A libvirt guest's configuration: the host entry's and the scenario's `libvirt:` keys, their
// schemas, and the guests' addresses.
#include "hosts/libvirt/libvirt_config.h"

#include <arpa/inet.h>
#include <fmt/format.h>

#include <charconv>
#include <regex>
#include <set>
#include <stdexcept>

#include "hosts/ssh/ssh_jump.h"

namespace ernic {
namespace fs = std::filesystem;
namespace {

std::chrono::seconds whole_seconds(std::chrono::milliseconds duration) {
  return std::max(std::chrono::seconds(1),
                  std::chrono::duration_cast<std::chrono::seconds>(duration));
}

std::string ipv4_text(std::uint32_t host_order) {
  in_addr address{htonl(host_order)};
  char text[INET_ADDRSTRLEN];
  ::inet_ntop(AF_INET, &address, text, sizeof text);
  return text;
}

bool in_subnet(const std::string& address, const Subnet& subnet) {
  in_addr parsed{};
  if (::inet_pton(AF_INET, address.c_str(), &parsed) != 1) {
    return false;
  }
  std::uint32_t mask = ~std::uint32_t{0} << (32 - subnet.prefix);
  return (ntohl(parsed.s_addr) & mask) == subnet.network;
}

FieldSchema field(std::string name, ValueKind kind, std::string description,
                  std::string default_text = {}) {
  FieldSchema result;
  result.name = std::move(name);
  result.kind = kind;
  result.description = std::move(description);
  result.default_text = std::move(default_text);
  return result;
}

FieldSchema object_field(std::string name, std::string description,
                         std::shared_ptr<const ObjectSchema> object) {
  FieldSchema result = field(std::move(name), ValueKind::kObject, std::move(description));
  result.object = std::move(object);
  return result;
}

FieldSchema enum_field(std::string name, std::string description, std::vector<std::string> values,
                       std::string default_text) {
  FieldSchema result =
      field(std::move(name), ValueKind::kEnum, std::move(description), std::move(default_text));
  result.enum_values = std::move(values);
  return result;
}

// "%2F" and friends in a URI's query.
std::string percent_decoded(std::string_view text) {
  std::string decoded;
  for (std::size_t i = 0; i < text.size(); ++i) {
    unsigned value = 0;
    if (text[i] == '%' && i + 2 < text.size() &&
        std::from_chars(text.data() + i + 1, text.data() + i + 3, value, 16).ptr ==
            text.data() + i + 3) {
      decoded += static_cast<char>(value);
      i += 2;
    } else {
      decoded += text[i];
    }
  }
  return decoded;
}

// The jump an SSH transport URI implies: its user and host, keyfile= and known_hosts=.
std::optional<GuestJump> jump_of_uri(const std::string& uri) {
  auto scheme_end = uri.find("://");
  if (scheme_end == std::string::npos) {
    return std::nullopt;
  }
  std::string scheme = uri.substr(0, scheme_end);
  auto plus = scheme.find('+');
  std::string transport = plus == std::string::npos ? "" : scheme.substr(plus + 1);
  if (transport != "ssh" && transport != "libssh" && transport != "libssh2") {
    return std::nullopt;
  }
  std::string rest = uri.substr(scheme_end + 3);
  std::string authority = rest.substr(0, rest.find_first_of("/?"));
  if (authority.empty()) {
    return std::nullopt;  // qemu+ssh:///system: this machine
  }
  GuestJump jump;
  try {
    jump.host = parse_ssh_destination(authority);
  } catch (const std::exception& error) {
    throw std::runtime_error(fmt::format("libvirt uri {}: {}", uri, error.what()));
  }
  auto query_at = rest.find('?');
  std::string_view query = query_at == std::string::npos
                               ? std::string_view()
                               : std::string_view(rest).substr(query_at + 1);
  while (!query.empty()) {
    std::string_view parameter = query.substr(0, query.find('&'));
    query.remove_prefix(std::min(query.size(), parameter.size() + 1));
    auto equals = parameter.find('=');
    if (equals == std::string_view::npos) {
      continue;
    }
    std::string_view name = parameter.substr(0, equals);
    std::string value = percent_decoded(parameter.substr(equals + 1));
    if (name == "keyfile") {
      jump.host.key = value;
    } else if (name == "known_hosts") {
      jump.known_hosts = value;
    }
  }
  return jump;
}

}  // namespace

namespace {

std::optional<GuestJump> with_jump_credentials(const LibvirtRunConfig& run,
                                               std::optional<GuestJump> jump) {
  if (jump && !run.jump_key.empty()) {
    jump->host.key = run.jump_key;
  }
  if (jump && !run.jump_known_hosts.empty()) {
    jump->known_hosts = run.jump_known_hosts;
  }
  return jump;
}

}  // namespace

std::optional<GuestJump> guest_jump(const LibvirtRunConfig& run, const std::string& uri) {
  return with_jump_credentials(
      run, run.jump ? std::optional<GuestJump>(GuestJump{*run.jump, {}}) : jump_of_uri(uri));
}

std::optional<GuestJump> libvirt_host_login(const LibvirtRunConfig& run, const std::string& uri) {
  return with_jump_credentials(run, jump_of_uri(uri));
}

std::string libvirt_uri_machine(const std::string& uri) {
  const auto scheme_end = uri.find("://");
  if (scheme_end == std::string::npos || uri.rfind("test://", 0) == 0) {
    return "";
  }
  std::string authority = uri.substr(scheme_end + 3);
  authority = authority.substr(0, authority.find_first_of("/?"));
  if (const auto at = authority.rfind('@'); at != std::string::npos) {
    authority = authority.substr(at + 1);
  }
  if (authority.starts_with('[')) {  // [IPv6]:port
    return authority.substr(1, authority.find(']') - 1);
  }
  return authority.substr(0, authority.find(':'));
}

bool image_is_recipe(const std::string& image) {
  return image.size() > 5 && image.substr(image.size() - 5) == ".yaml";
}

Subnet parse_subnet(const std::string& text) {
  static const std::regex kCidr{R"((\d+\.\d+\.\d+\.\d+)/(\d+))"};
  std::smatch match;
  in_addr address{};
  if (!std::regex_match(text, match, kCidr) ||
      ::inet_pton(AF_INET, match[1].str().c_str(), &address) != 1) {
    throw std::runtime_error(
        fmt::format("libvirt.network.subnet: '{}' is not a subnet such as "
                    "192.168.77.0/24",
                    text));
  }
  int prefix = std::stoi(match[2].str());
  if (prefix < 8 || prefix > 28) {
    throw std::runtime_error(
        fmt::format("libvirt.network.subnet: prefix /{} must be between /8 and /28", prefix));
  }
  std::uint32_t mask = prefix == 0 ? 0 : ~std::uint32_t{0} << (32 - prefix);
  return {ntohl(address.s_addr) & mask, prefix};
}

std::string subnet_address(const Subnet& subnet, std::uint32_t offset) {
  return ipv4_text(subnet.network + offset);
}

LibvirtGuestConfig parse_libvirt_guest(const HostSpec& host, const fs::path& base_dir) {
  LibvirtGuestConfig config;
  config.name = host.name;
  config.address = host.address;
  const Config section = host.config.object("libvirt");
  config.uri = section.text("uri", config.uri);
  config.image = section.text("image", config.image);
  config.qcow2 = section.text("qcow2", config.qcow2);
  config.vcpus = static_cast<int>(section.integer("vcpus", config.vcpus));
  std::uint64_t memory = section.bytes("memory", config.memory_mib << 20);
  if (memory < (128ULL << 20)) {
    throw std::runtime_error(fmt::format(
        "hosts.{}.libvirt.memory: expected a size of at least 128MiB such as 1GiB", host.name));
  }
  config.memory_mib = memory >> 20;
  config.kernel_boot = section.flag("kernel_boot", config.kernel_boot);
  config.accelerator = section.text("accelerator", config.accelerator);
  config.login = section.text("login", config.login);
  config.emulator_socket = section.text("emulator_socket", config.emulator_socket);
  config.instance = static_cast<int>(host.config.integer("instance", 0));
  const Config timeouts = section.object("timeouts");
  StageTimeouts& stages = config.timeouts;
  stages.running = whole_seconds(timeouts.duration("running", stages.running));
  stages.address = whole_seconds(timeouts.duration("address", stages.address));
  stages.ssh = whole_seconds(timeouts.duration("ssh", stages.ssh));
  stages.host_key = whole_seconds(timeouts.duration("host_key", stages.host_key));
  if (config.image.empty()) {
    throw std::runtime_error(
        fmt::format("hosts.{}.libvirt.image: an image recipe or manifest is required", host.name));
  }
  fs::path image(config.image);
  if (image.is_relative()) {
    config.image = (base_dir / image).lexically_normal().string();
  }
  return config;
}

LibvirtRunConfig parse_libvirt_run(const Config& scenario) {
  LibvirtRunConfig config;
  const Config section = scenario.object("libvirt");
  const Config network = section.object("network");
  config.subnet = network.text("subnet", config.subnet);
  config.bridge = network.text("bridge", config.bridge);
  config.dhcp = network.flag("dhcp", config.dhcp);
  config.image_cache = section.text("image_cache", config.image_cache.string());
  config.pool_dir = section.text("pool_dir", config.pool_dir.string());
  if (section.has("jump")) {
    try {
      config.jump = parse_ssh_destination(section.text("jump", ""));
    } catch (const std::exception& error) {
      throw std::runtime_error(fmt::format("libvirt.jump: {}", error.what()));
    }
  }
  config.jump_key = section.text("jump_key", "");
  config.jump_known_hosts = section.text("jump_known_hosts", "");
  parse_subnet(config.subnet);  // throws with the reason
  return config;
}

std::vector<std::string> assign_guest_addresses(const std::vector<std::string>& requested,
                                                const std::string& subnet_text) {
  Subnet subnet = parse_subnet(subnet_text);
  std::uint32_t size = std::uint32_t{1} << (32 - subnet.prefix);
  std::set<std::string> taken(requested.begin(), requested.end());
  std::vector<std::string> assigned;
  std::uint32_t next = 10;
  for (const auto& address : requested) {
    if (!address.empty()) {
      if (!in_subnet(address, subnet)) {
        throw std::runtime_error(
            fmt::format("address {} is outside the guests' subnet {}", address, subnet_text));
      }
      assigned.push_back(address);
      continue;
    }
    std::string candidate;
    do {
      if (next >= size - 1) {
        throw std::runtime_error(
            fmt::format("subnet {} has no room for {} guests", subnet_text, requested.size()));
      }
      candidate = ipv4_text(subnet.network + next++);
    } while (taken.count(candidate) != 0);
    taken.insert(candidate);
    assigned.push_back(candidate);
  }
  return assigned;
}

const ObjectSchema& libvirt_host_schema() {
  static const ObjectSchema schema = [] {
    auto timeouts = std::make_shared<ObjectSchema>();
    timeouts->description = "Per-stage readiness timeouts, each counted from the stage before";
    timeouts->fields = {
        field("running", ValueKind::kDuration, "Until libvirt reports the domain running", "60s"),
        field("address", ValueKind::kDuration, "Until the guest's address is known (DHCP lease)",
              "120s"),
        field("ssh", ValueKind::kDuration, "Until sshd answers with its banner", "600s"),
        field("host_key", ValueKind::kDuration, "Until the host key is verified and login works",
              "120s"),
    };
    auto libvirt = std::make_shared<ObjectSchema>();
    libvirt->description = "How the guest is booted";
    FieldSchema vcpus = field("vcpus", ValueKind::kInteger, "Virtual CPUs", "1");
    vcpus.minimum = 1;
    vcpus.maximum = 64;
    libvirt->fields = {
        field("uri", ValueKind::kString,
              "libvirt connection URI (qemu:///system, qemu+ssh://host/system)", "qemu:///system"),
        field("image", ValueKind::kString,
              "Image recipe (.yaml, built and cached) or manifest (.json: ernicctl's or "
              "rocm-ernic's vm-info.json)",
              "images/debian12-rdma.yaml"),
        field("qcow2", ValueKind::kString, "Base disk, overriding the manifest's"),
        vcpus,
        field("memory", ValueKind::kSize, "Guest memory", "1GiB"),
        field("kernel_boot", ValueKind::kBoolean, "Boot the image's kernel directly", "true"),
        enum_field("accelerator", "auto: KVM only when the CPU has vmx/svm", {"auto", "kvm", "tcg"},
                   "auto"),
        enum_field("login", "Log in as root (when the image allows) or as the image's user",
                   {"root", "user"}, "root"),
        field("emulator_socket", ValueKind::kString, "vfio-user socket of an emulator instance"),
        object_field("timeouts", "Readiness stage timeouts", timeouts),
    };
    ObjectSchema host;
    host.description = "A libvirt guest";
    host.fields = {object_field("libvirt", "Guest settings", libvirt)};
    return host;
  }();
  return schema;
}

const ObjectSchema& libvirt_run_schema() {
  static const ObjectSchema schema = [] {
    auto network = std::make_shared<ObjectSchema>();
    network->description = "The guests' network";
    network->fields = {
        field("subnet", ValueKind::kCidr, "Subnet of the isolated network ernicctl creates",
              "192.168.77.0/24"),
        field("bridge", ValueKind::kString, "Use this existing host bridge instead"),
        field("dhcp", ValueKind::kBoolean, "Guests take DHCP leases instead of static addresses",
              "false"),
    };
    ObjectSchema run;
    run.description = "Settings shared by the libvirt guests of a scenario";
    run.fields = {
        object_field("network", "Guest network", network),
        field("image_cache", ValueKind::kString, "Where built images are cached",
              "/var/cache/ernicctl/images"),
        field("pool_dir", ValueKind::kString, "Where guest overlays are created",
              "/var/lib/libvirt/images/ernic-RUN"),
        field("jump", ValueKind::kString,
              "Reach the guests over SSH through this host (user@host[:port]); without it the "
              "guests of a qemu+ssh:// URI are reached through the URI's user and host, local "
              "guests directly"),
        field("jump_key", ValueKind::kString,
              "Private key for the jump host; default: the URI's keyfile=, else the agent and "
              "~/.ssh/id_*"),
        field("jump_known_hosts", ValueKind::kString,
              "known_hosts file the jump host's key is verified against (strictly); default: the "
              "URI's known_hosts=, else ~/.ssh/known_hosts"),
    };
    return run;
  }();
  return schema;
}

}  // namespace ernic
