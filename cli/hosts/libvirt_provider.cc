#include "hosts/libvirt_provider.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <libvirt/libvirt.h>

#include <cmath>
#include <fstream>
#include <regex>
#include <set>
#include <stdexcept>
#include <thread>

#include "common/interrupt.h"
#include "common/units.h"
#include "hosts/libvirt_accel.h"
#include "hosts/libvirt_connection.h"
#include "hosts/libvirt_readiness.h"
#include "hosts/ssh_host.h"
#include "image/image_builder.h"
#include "image/recipe.h"

namespace ernic {
namespace fs = std::filesystem;
namespace {

using SteadyClock = std::chrono::steady_clock;

std::string node_text(const YAML::Node& node) {
  return node.IsScalar() ? node.Scalar() : std::string();
}

std::chrono::seconds seconds_from(const YAML::Node& node, const std::string& what) {
  auto parsed = parse_duration(node_text(node));
  if (!parsed || *parsed <= std::chrono::nanoseconds::zero()) {
    throw std::runtime_error(fmt::format("{}: expected a duration such as 90s", what));
  }
  return std::max(std::chrono::seconds(1),
                  std::chrono::duration_cast<std::chrono::seconds>(*parsed));
}

struct Subnet {
  std::uint32_t network = 0;  // host byte order
  int prefix = 24;
};

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

std::string serial_tail(const fs::path& log, std::size_t lines = 12) {
  std::ifstream in(log);
  if (!in) {
    return {};
  }
  std::vector<std::string> kept;
  std::string line;
  while (std::getline(in, line)) {
    // Boot status lines are full of terminal escapes; keep them readable.
    line = std::regex_replace(line, std::regex("\x1b\\[[0-9;]*[A-Za-z]"), "");
    kept.push_back(line);
    if (kept.size() > lines) {
      kept.erase(kept.begin());
    }
  }
  std::string text;
  for (const auto& kept_line : kept) {
    text += "    " + kept_line + "\n";
  }
  return text;
}

std::uint64_t qcow2_virtual_size(const fs::path& disk) {
  std::ifstream in(disk, std::ios::binary);
  unsigned char header[32] = {};
  if (!in.read(reinterpret_cast<char*>(header), sizeof header) || header[0] != 'Q' ||
      header[1] != 'F' || header[2] != 'I' || header[3] != 0xfb) {
    throw std::runtime_error(fmt::format("{} is not a qcow2 image", disk.string()));
  }
  std::uint64_t size = 0;
  for (int i = 24; i < 32; ++i) {
    size = (size << 8) | header[i];
  }
  return size;
}

const char* domain_state_name(int state) {
  switch (state) {
    case VIR_DOMAIN_RUNNING:
      return "running";
    case VIR_DOMAIN_BLOCKED:
      return "blocked";
    case VIR_DOMAIN_PAUSED:
      return "paused";
    case VIR_DOMAIN_SHUTDOWN:
      return "shutting down";
    case VIR_DOMAIN_SHUTOFF:
      return "shut off";
    case VIR_DOMAIN_CRASHED:
      return "crashed";
    case VIR_DOMAIN_PMSUSPENDED:
      return "suspended";
    default:
      return "in no known state";
  }
}

// The state of a domain by name, or -1 when it no longer exists.
int domain_state(virConnectPtr connection, const std::string& name) {
  virDomainPtr domain = virDomainLookupByName(connection, name.c_str());
  if (domain == nullptr) {
    return -1;
  }
  int state = -1;
  int reason = 0;
  if (virDomainGetState(domain, &state, &reason, 0) != 0) {
    state = -1;
  }
  virDomainFree(domain);
  return state;
}

// One guest on its way up.
struct BootingGuest {
  LibvirtGuestConfig config;
  GuestImage image;
  std::string domain;
  std::string mac;
  std::string address;
  fs::path serial_log;
  AcceleratorChoice accelerator;
  std::string emulated_nic = "none";
  SteadyClock::time_point started;
  std::map<std::string, double> stage_seconds;
};

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

}  // namespace

SshHostFactory default_ssh_host_factory() {
  return [](const GuestSshTarget& target) -> std::unique_ptr<Host> {
    SshConnectOptions options;
    options.label = target.name;
    options.target.host = target.address;
    options.target.port = target.port;
    options.target.user = target.user;
    options.target.key = target.private_key;
    // The image's host keys, written by create(): strict, never trust on first use.
    options.known_hosts = target.known_hosts;
    options.host_key_policy = HostKeyPolicy::kStrict;
    // Key exchange in a TCG guest on a busy machine takes seconds.
    options.connect_timeout = std::chrono::seconds(60);
    options.alive_timeout = std::chrono::seconds(30);
    return std::make_unique<SshHost>(target.name, target.address, std::move(options));
  };
}

LibvirtGuestConfig parse_libvirt_guest(const HostSpec& host, const fs::path& base_dir) {
  LibvirtGuestConfig config;
  config.name = host.name;
  config.address = host.address;
  const YAML::Node section = host.config["libvirt"];
  auto where = [&](const std::string& key) {
    return fmt::format("hosts.{}.libvirt.{}", host.name, key);
  };
  if (section && !section.IsMap()) {
    throw std::runtime_error(fmt::format("hosts.{}.libvirt: expected a mapping", host.name));
  }
  static const std::set<std::string> kKeys{
      "uri",         "image",       "qcow2", "vcpus",           "memory",
      "kernel_boot", "accelerator", "login", "emulator_socket", "timeouts"};
  if (section) {
    for (const auto& entry : section) {
      std::string key = entry.first.as<std::string>();
      if (kKeys.count(key) == 0) {
        throw std::runtime_error(fmt::format("{}: unknown key", where(key)));
      }
    }
    if (section["uri"])
      config.uri = node_text(section["uri"]);
    if (section["image"])
      config.image = node_text(section["image"]);
    if (section["qcow2"])
      config.qcow2 = node_text(section["qcow2"]);
    if (section["vcpus"]) {
      try {
        config.vcpus = std::stoi(node_text(section["vcpus"]));
      } catch (const std::exception&) {
        config.vcpus = 0;
      }
      if (config.vcpus < 1 || config.vcpus > 64) {
        throw std::runtime_error(fmt::format("{}: expected 1 to 64", where("vcpus")));
      }
    }
    if (section["memory"]) {
      auto size = parse_size(node_text(section["memory"]));
      if (!size || *size < (128ULL << 20)) {
        throw std::runtime_error(
            fmt::format("{}: expected a size of at least 128MiB such as 1GiB", where("memory")));
      }
      config.memory_mib = *size >> 20;
    }
    if (section["kernel_boot"]) {
      std::string text = node_text(section["kernel_boot"]);
      if (text != "true" && text != "false") {
        throw std::runtime_error(fmt::format("{}: expected true or false", where("kernel_boot")));
      }
      config.kernel_boot = text == "true";
    }
    if (section["accelerator"]) {
      config.accelerator = node_text(section["accelerator"]);
      if (config.accelerator != "auto" && config.accelerator != "kvm" &&
          config.accelerator != "tcg") {
        throw std::runtime_error(
            fmt::format("{}: expected auto, kvm or tcg", where("accelerator")));
      }
    }
    if (section["login"]) {
      config.login = node_text(section["login"]);
      if (config.login != "root" && config.login != "user") {
        throw std::runtime_error(fmt::format("{}: expected root or user", where("login")));
      }
    }
    if (section["emulator_socket"])
      config.emulator_socket = node_text(section["emulator_socket"]);
    if (const auto timeouts = section["timeouts"]) {
      for (const auto& entry : timeouts) {
        std::string key = entry.first.as<std::string>();
        auto value = seconds_from(entry.second, where("timeouts." + key));
        if (key == "running")
          config.timeouts.running = value;
        else if (key == "address")
          config.timeouts.address = value;
        else if (key == "ssh")
          config.timeouts.ssh = value;
        else if (key == "host_key")
          config.timeouts.host_key = value;
        else
          throw std::runtime_error(fmt::format(
              "{}: unknown stage (running, address, ssh, host_key)", where("timeouts." + key)));
      }
    }
  }
  if (config.image.empty()) {
    throw std::runtime_error(
        fmt::format("{}: an image recipe or manifest is required", where("image")));
  }
  fs::path image(config.image);
  if (image.is_relative()) {
    config.image = (base_dir / image).lexically_normal().string();
  }
  return config;
}

LibvirtRunConfig parse_libvirt_run(const YAML::Node& scenario) {
  LibvirtRunConfig config;
  const YAML::Node section = scenario ? scenario["libvirt"] : YAML::Node();
  if (!section) {
    return config;
  }
  if (const auto network = section["network"]) {
    if (network["subnet"])
      config.subnet = node_text(network["subnet"]);
    if (network["bridge"])
      config.bridge = node_text(network["bridge"]);
    if (network["dhcp"])
      config.dhcp = node_text(network["dhcp"]) == "true";
  }
  if (section["image_cache"])
    config.image_cache = node_text(section["image_cache"]);
  if (section["pool_dir"])
    config.pool_dir = node_text(section["pool_dir"]);
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

// ---------------------------------------------------------------------------------------------

LibvirtGuest::LibvirtGuest(std::shared_ptr<LibvirtConnection> connection, std::string domain_name,
                           GuestSshTarget target, std::unique_ptr<Host> transport,
                           std::map<std::string, std::string> facts, double t_init_s)
    : connection_(std::move(connection)),
      domain_name_(std::move(domain_name)),
      target_(std::move(target)),
      transport_(std::move(transport)),
      facts_(std::move(facts)),
      t_init_s_(t_init_s) {}

std::string LibvirtGuest::describe() const {
  return fmt::format("{} (libvirt domain {}, {}, {})", target_.name, domain_name_, target_.address,
                     facts_.count("accelerator") ? facts_.at("accelerator") : "?");
}

Host& LibvirtGuest::transport() {
  if (!transport_) {
    throw std::runtime_error(fmt::format(
        "{}: no SSH transport to run commands with (the ssh host provider is not built in)",
        describe()));
  }
  return *transport_;
}

std::unique_ptr<RunningCommand> LibvirtGuest::start(const CommandSpec& spec, OutputSink* sink) {
  return transport().start(spec, sink);
}

void LibvirtGuest::upload(std::string_view content, const std::string& path, int mode) {
  transport().upload(content, path, mode);
}

bool LibvirtGuest::is_listening(std::uint16_t port) {
  return transport().is_listening(port);
}

bool LibvirtGuest::has_program(const std::string& program) {
  return transport().has_program(program);
}

std::string LibvirtGuest::check_alive() {
  int state = domain_state(connection_->get(), domain_name_);
  if (state < 0) {
    return fmt::format("libvirt domain {} no longer exists", domain_name_);
  }
  if (state != VIR_DOMAIN_RUNNING) {
    return fmt::format("libvirt domain {} is {}", domain_name_, domain_state_name(state));
  }
  return transport_ ? transport_->check_alive() : std::string();
}

// ---------------------------------------------------------------------------------------------

LibvirtProvider::LibvirtProvider(SshHostFactory ssh_factory)
    : ssh_factory_(std::move(ssh_factory)) {}

const ObjectSchema& LibvirtProvider::host_schema() const {
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

const ObjectSchema& LibvirtProvider::run_schema() {
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
    };
    return run;
  }();
  return schema;
}

void LibvirtProvider::check(const std::vector<HostSpec>& hosts, const YAML::Node& scenario,
                            const std::string& file, Diagnostics& out) const {
  std::vector<std::string> requested;
  LibvirtRunConfig run;
  try {
    run = parse_libvirt_run(scenario);
  } catch (const std::exception& error) {
    out.push_back(diagnostic_at(scenario["libvirt"], file, "libvirt", error.what()));
    return;
  }
  for (const auto& host : hosts) {
    try {
      auto config = parse_libvirt_guest(host, base_dir_);
      requested.push_back(config.address);
      if (config.kernel_boot == false && config.image.size() > 5 &&
          config.image.substr(config.image.size() - 5) == ".yaml") {
        throw std::runtime_error(fmt::format(
            "hosts.{}.libvirt.kernel_boot: images built from recipes have no bootloader; they boot "
            "with kernel_boot: true",
            host.name));
      }
    } catch (const std::exception& error) {
      out.push_back(diagnostic_at(host.config, file, "hosts." + host.name, error.what()));
    }
  }
  if (run.bridge.empty() && !run.dhcp) {
    try {
      assign_guest_addresses(requested, run.subnet);
    } catch (const std::exception& error) {
      out.push_back(diagnostic_at(scenario["libvirt"], file, "libvirt.network", error.what()));
    }
  }
}

std::vector<std::string> LibvirtProvider::planned_addresses(const std::vector<HostSpec>& hosts,
                                                            const YAML::Node& scenario) const {
  auto run = parse_libvirt_run(scenario);
  if (run.dhcp) {
    return std::vector<std::string>(hosts.size());
  }
  std::vector<std::string> requested;
  for (const auto& host : hosts) {
    requested.push_back(host.address);
  }
  return assign_guest_addresses(requested, run.subnet);
}

std::vector<std::string> LibvirtProvider::describe(const std::vector<HostSpec>& hosts,
                                                   const ProviderContext& context) const {
  std::vector<std::string> lines;
  auto run = parse_libvirt_run(context.scenario);
  std::vector<LibvirtGuestConfig> guests;
  std::vector<std::string> requested;
  for (const auto& host : hosts) {
    guests.push_back(parse_libvirt_guest(host, base_dir_));
    requested.push_back(guests.back().address);
  }
  auto addresses = assign_guest_addresses(requested, run.subnet);
  std::string network = "ernic-" + context.run_token;
  fs::path pool_dir =
      run.pool_dir.empty() ? fs::path("/var/lib/libvirt/images") / network : run.pool_dir;
  std::set<std::string> images;
  for (const auto& guest : guests) {
    if (guest.image.size() > 5 && guest.image.substr(guest.image.size() - 5) == ".yaml" &&
        images.insert(guest.image).second) {
      lines.push_back(fmt::format("ernicctl image build {} --out {}  # skipped when cached",
                                  guest.image, run.image_cache.string()));
    }
  }
  if (run.bridge.empty()) {
    lines.push_back(fmt::format("virsh -c {} net-create <isolated network {} on bridge {}, {}>",
                                guests.empty() ? "qemu:///system" : guests.front().uri, network,
                                network.substr(0, 15), run.subnet));
  }
  lines.push_back(
      fmt::format("virsh pool-define-as {} dir --target {} && virsh pool-build {} && "
                  "virsh pool-start {}",
                  network, pool_dir.string(), network, network));
  for (std::size_t i = 0; i < guests.size(); ++i) {
    const auto& guest = guests[i];
    std::string domain = fmt::format("{}-{}", network, guest.name);
    lines.push_back(
        fmt::format("virsh vol-create-as {} {}.qcow2 --format qcow2 --backing-vol "
                    "<base disk of {}> --backing-vol-format qcow2",
                    network, guest.name, guest.image));
    lines.push_back(fmt::format(
        "virsh -c {} define <domain {}: {} vCPU, {} MiB, accelerator {}, address {}, serial log "
        "{}{}> && virsh start {}",
        guest.uri, domain, guest.vcpus, guest.memory_mib, guest.accelerator,
        run.dhcp ? "DHCP" : addresses[i], (context.run_dir / (guest.name + ".serial.log")).string(),
        guest.emulator_socket.empty()
            ? std::string()
            : fmt::format(", shared memfd memory, -device vfio-user-pci socket {} (when QEMU has "
                          "vfio-user-pci)",
                          guest.emulator_socket),
        domain));
    lines.push_back(fmt::format(
        "wait {}: running <= {}s, address <= {}s, ssh {}:22 <= {}s, host key verified <= {}s",
        guest.name, guest.timeouts.running.count(), guest.timeouts.address.count(),
        run.dhcp ? "DHCP" : addresses[i], guest.timeouts.ssh.count(),
        guest.timeouts.host_key.count()));
  }
  return lines;
}

std::vector<std::unique_ptr<Host>> LibvirtProvider::create(const std::vector<HostSpec>& hosts,
                                                           ProviderContext& context) {
  if (context.cleanup == nullptr) {
    throw std::logic_error("libvirt provider: no cleanup stack");
  }
  CleanupStack& cleanup = *context.cleanup;
  auto say = [&](const std::string& line) {
    if (progress_) {
      progress_(line);
    }
  };
  auto stopped = [&] { return (stop_ != nullptr && stop_->load()) || Interrupt::requested(); };
  auto run = parse_libvirt_run(context.scenario);
  std::vector<BootingGuest> guests;
  std::vector<std::string> requested;
  for (const auto& host : hosts) {
    BootingGuest guest;
    guest.config = parse_libvirt_guest(host, base_dir_);
    requested.push_back(guest.config.address);
    guests.push_back(std::move(guest));
  }
  if (guests.empty()) {
    return {};
  }
  auto addresses = assign_guest_addresses(requested, run.subnet);
  const std::string uri = guests.front().config.uri;
  for (const auto& guest : guests) {
    if (guest.config.uri != uri) {
      throw std::runtime_error(fmt::format(
          "hosts.{}.libvirt.uri: guests sharing one network must use one libvirt URI ({} vs {})",
          guest.config.name, guest.config.uri, uri));
    }
  }
  bool local = is_local_system_uri(uri) || uri.rfind("test://", 0) == 0;
  if (is_local_system_uri(uri)) {
    // No systemd here: nothing else starts the daemons. They are system services, left running.
    LibvirtDaemons daemons;
    daemons.ensure_running(std::chrono::seconds(60));
    std::error_code ignored;
    fs::create_directories("/var/lib/libvirt/dnsmasq", ignored);
  }
  auto connection = std::make_shared<LibvirtConnection>(uri);

  // Images: each distinct recipe is built (or found in the cache) once.
  std::map<std::string, GuestImage> images;
  for (auto& guest : guests) {
    const std::string& source = guest.config.image;
    if (images.count(source) == 0) {
      if (source.size() > 5 && source.substr(source.size() - 5) == ".yaml") {
        ImageBuildOptions options;
        options.out_dir = run.image_cache;
        options.stop = stop_;
        options.progress = [&](const std::string& line) { say("image: " + line); };
        auto built = build_image(load_image_recipe(source), options);
        say(fmt::format(
            "image {} {}", built.image.manifest.string(),
            built.cached ? "(cached)" : fmt::format("(built in {:.0f} s)", built.seconds)));
        images[source] = built.image;
      } else {
        images[source] = load_image_manifest(source);
      }
    }
    guest.image = images[source];
    if (!guest.config.qcow2.empty()) {
      guest.image.disk = guest.config.qcow2;
    }
    if (guest.config.kernel_boot && guest.image.kernel.empty()) {
      throw std::runtime_error(fmt::format(
          "hosts.{}.libvirt.kernel_boot: image {} names no kernel for direct kernel boot",
          guest.config.name, guest.image.manifest.string()));
    }
    if (guest.config.login == "root" && !guest.image.root_login) {
      guest.config.login = "user";
    }
  }

  // Accelerator: decided once per libvirt host.
  AcceleratorChoice detected;
  if (uri.rfind("test://", 0) == 0) {
    detected = {Accelerator::kTcg, "test driver"};
  } else if (local) {
    detected = detect_local_accelerator();
  } else {
    char* capabilities = virConnectGetCapabilities(connection->get());
    if (capabilities == nullptr) {
      throw std::runtime_error(
          fmt::format("{}: cannot read capabilities: {}", uri, libvirt_error_message()));
    }
    detected = choose_accelerator_from_capabilities(capabilities);
    free(capabilities);
  }
  VfioUserSupport vfio_user;
  bool vfio_user_probed = false;

  const std::string network = "ernic-" + context.run_token;
  fs::path pool_dir =
      run.pool_dir.empty() ? fs::path("/var/lib/libvirt/images") / network : run.pool_dir;

  // The network, then the pool and overlays, then the domains: each undo is pushed as soon as
  // the resource exists, so an error or Ctrl-C at any point leaves nothing behind.
  std::string network_name;
  if (run.bridge.empty()) {
    Subnet subnet = parse_subnet(run.subnet);
    NetworkSpec spec;
    spec.name = network;
    spec.bridge = network.substr(0, 15);
    spec.host_address = ipv4_text(subnet.network + 1);
    spec.prefix = subnet.prefix;
    if (run.dhcp) {
      std::uint32_t size = std::uint32_t{1} << (32 - subnet.prefix);
      spec.dhcp_start = ipv4_text(subnet.network + size / 2);
      spec.dhcp_end = ipv4_text(subnet.network + size - 2);
    }
    std::string xml = network_xml(spec);
    virNetworkPtr created = virNetworkCreateXML(connection->get(), xml.c_str());
    if (created == nullptr) {
      throw std::runtime_error(fmt::format("cannot create libvirt network {} ({}): {}", network,
                                           run.subnet, libvirt_error_message()));
    }
    virNetworkFree(created);
    cleanup.push(fmt::format("destroy libvirt network {}", network), [connection, network] {
      virNetworkPtr net = virNetworkLookupByName(connection->get(), network.c_str());
      if (net != nullptr) {
        int rc = virNetworkDestroy(net);
        virNetworkFree(net);
        if (rc != 0) {
          throw std::runtime_error(libvirt_error_message());
        }
      }
    });
    network_name = network;
    say(fmt::format("network {} ({}) created", network, run.subnet));
  }

  {
    std::string xml = storage_pool_xml(network, pool_dir);
    virStoragePoolPtr pool = virStoragePoolDefineXML(connection->get(), xml.c_str(), 0);
    if (pool == nullptr) {
      throw std::runtime_error(fmt::format("cannot define storage pool {} at {}: {}", network,
                                           pool_dir.string(), libvirt_error_message()));
    }
    cleanup.push(fmt::format("remove storage pool {} ({})", network, pool_dir.string()),
                 [connection, network] {
                   virStoragePoolPtr found =
                       virStoragePoolLookupByName(connection->get(), network.c_str());
                   if (found == nullptr) {
                     return;
                   }
                   int active = virStoragePoolIsActive(found);
                   if (active == 1) {
                     virStoragePoolDestroy(found);
                   }
                   virStoragePoolDelete(found, 0);  // the folder, now empty
                   int rc = virStoragePoolUndefine(found);
                   virStoragePoolFree(found);
                   if (rc != 0) {
                     throw std::runtime_error(libvirt_error_message());
                   }
                 });
    bool ok = virStoragePoolBuild(pool, 0) == 0 && virStoragePoolCreate(pool, 0) == 0;
    virStoragePoolFree(pool);
    if (!ok) {
      throw std::runtime_error(fmt::format("cannot create storage pool {} at {}: {}", network,
                                           pool_dir.string(), libvirt_error_message()));
    }
  }

  for (std::size_t i = 0; i < guests.size(); ++i) {
    auto& guest = guests[i];
    const auto& config = guest.config;
    guest.domain = fmt::format("{}-{}", network, config.name);
    guest.mac = guest_mac(context.run_token, static_cast<int>(i));
    guest.address = run.dhcp ? std::string() : addresses[i];
    guest.serial_log = (local ? context.run_dir : pool_dir) / (config.name + ".serial.log");
    guest.accelerator = detected;
    if (config.accelerator == "tcg") {
      guest.accelerator = {Accelerator::kTcg, "the scenario asks for TCG"};
    } else if (config.accelerator == "kvm") {
      if (detected.accelerator != Accelerator::kKvm) {
        throw std::runtime_error(
            fmt::format("hosts.{}.libvirt.accelerator: kvm was asked for, but {}", config.name,
                        detected.reason));
      }
    }

    std::uint64_t capacity = 0;
    if (local) {
      capacity = qcow2_virtual_size(guest.image.disk);
    } else {
      capacity = guest.image.disk_size;
      if (capacity == 0) {
        throw std::runtime_error(
            fmt::format("hosts.{}: the manifest of {} gives no disk size, "
                        "needed for an overlay on a remote host",
                        config.name, guest.image.manifest.string()));
      }
    }
    std::string volume = config.name + ".qcow2";
    {
      virStoragePoolPtr pool = virStoragePoolLookupByName(connection->get(), network.c_str());
      std::string xml =
          overlay_volume_xml(volume, guest.image.disk, guest.image.disk_format, capacity);
      virStorageVolPtr created = pool ? virStorageVolCreateXML(pool, xml.c_str(), 0) : nullptr;
      if (pool) {
        virStoragePoolFree(pool);
      }
      if (created == nullptr) {
        throw std::runtime_error(fmt::format("hosts.{}: cannot create the overlay on {}: {}",
                                             config.name, guest.image.disk.string(),
                                             libvirt_error_message()));
      }
      virStorageVolFree(created);
      cleanup.push(fmt::format("delete overlay {}/{}", pool_dir.string(), volume),
                   [connection, network, volume] {
                     virStoragePoolPtr found =
                         virStoragePoolLookupByName(connection->get(), network.c_str());
                     if (found == nullptr) {
                       return;
                     }
                     virStorageVolPtr vol = virStorageVolLookupByName(found, volume.c_str());
                     virStoragePoolFree(found);
                     if (vol != nullptr) {
                       int rc = virStorageVolDelete(vol, 0);
                       virStorageVolFree(vol);
                       if (rc != 0) {
                         throw std::runtime_error(libvirt_error_message());
                       }
                     }
                   });
    }

    DomainSpec spec;
    spec.name = guest.domain;
    spec.accelerator = guest.accelerator.accelerator;
    spec.vcpus = config.vcpus;
    spec.memory_mib = config.memory_mib;
    spec.disk = pool_dir / volume;
    if (config.kernel_boot) {
      spec.kernel = guest.image.kernel;
      spec.initrd = guest.image.initrd;
      spec.kernel_cmdline = guest.image.kernel_cmdline;
      spec.kernel_cmdline += " systemd.hostname=" + config.name;
      if (!guest.address.empty() && !guest.image.static_address_arg.empty()) {
        spec.kernel_cmdline += fmt::format(" {}={}/{}", guest.image.static_address_arg,
                                           guest.address, parse_subnet(run.subnet).prefix);
      }
    }
    if (network_name.empty()) {
      spec.bridge = run.bridge;
    } else {
      spec.network = network_name;
    }
    spec.mac = guest.mac;
    spec.serial_log = guest.serial_log;
    if (!config.emulator_socket.empty()) {
      if (!vfio_user_probed) {
        vfio_user = local ? detect_vfio_user_support()
                          : VfioUserSupport{false,
                                            "QEMU's devices cannot be listed on a remote "
                                            "libvirt host"};
        vfio_user_probed = true;
      }
      if (vfio_user.available) {
        spec.vfio_user_socket = config.emulator_socket;
        guest.emulated_nic = "attached: " + config.emulator_socket;
      } else {
        guest.emulated_nic = "not attached: " + vfio_user.reason;
        say(fmt::format("{}: emulated NIC not attached: {}", config.name, vfio_user.reason));
      }
    }
    std::string xml = domain_xml(spec);
    { std::ofstream(context.run_dir / (config.name + ".domain.xml")) << xml; }
    if (virDomainPtr existing = virDomainLookupByName(connection->get(), guest.domain.c_str())) {
      virDomainFree(existing);
      throw std::runtime_error(fmt::format(
          "libvirt domain {0} already exists (left over from a killed run? `virsh destroy {0}; "
          "virsh undefine {0}`)",
          guest.domain));
    }
    virDomainPtr domain = virDomainDefineXML(connection->get(), xml.c_str());
    if (domain == nullptr) {
      throw std::runtime_error(fmt::format("hosts.{}: libvirt rejected domain {}: {}", config.name,
                                           guest.domain, libvirt_error_message()));
    }
    std::string domain_name = guest.domain;
    cleanup.push(fmt::format("undefine libvirt domain {}", domain_name), [connection, domain_name] {
      virDomainPtr found = virDomainLookupByName(connection->get(), domain_name.c_str());
      if (found != nullptr) {
        int rc = virDomainUndefine(found);
        virDomainFree(found);
        if (rc != 0) {
          throw std::runtime_error(libvirt_error_message());
        }
      }
    });
    cleanup.push(fmt::format("destroy libvirt domain {}", domain_name), [connection, domain_name] {
      virDomainPtr found = virDomainLookupByName(connection->get(), domain_name.c_str());
      if (found != nullptr) {
        if (virDomainIsActive(found) == 1) {
          virDomainDestroy(found);
        }
        virDomainFree(found);
      }
    });
    guest.started = SteadyClock::now();
    int rc = virDomainCreate(domain);
    virDomainFree(domain);
    if (rc != 0) {
      throw std::runtime_error(fmt::format("hosts.{}: domain {} did not start: {}", config.name,
                                           guest.domain, libvirt_error_message()));
    }
    say(fmt::format("{}: domain {} started ({}, {} vCPU, {} MiB)", config.name, guest.domain,
                    accelerator_name(guest.accelerator.accelerator), config.vcpus,
                    config.memory_mib));
  }

  // Readiness, in stages. The guests boot in parallel; each stage's deadline is its own.
  std::vector<std::unique_ptr<Host>> created;
  fs::path known_hosts = context.run_dir / "libvirt_known_hosts";
  for (auto& guest : guests) {
    const auto& config = guest.config;
    auto stage_start = SteadyClock::now();
    auto fail = [&](const std::string& stage, std::chrono::seconds timeout,
                    const std::string& why) {
      int state = domain_state(connection->get(), guest.domain);
      std::string tail = serial_tail(guest.serial_log);
      throw std::runtime_error(fmt::format(
          "{}: readiness stage '{}' failed after {:.0f} s (timeout {} s): {}\n  domain {} is {}; "
          "serial console {}{}{}",
          config.name, stage,
          std::chrono::duration<double>(SteadyClock::now() - stage_start).count(), timeout.count(),
          why, guest.domain, state < 0 ? "gone" : domain_state_name(state),
          guest.serial_log.string(), tail.empty() ? "" : ", last lines:\n", tail));
    };
    auto wait_stage = [&](const std::string& stage, std::chrono::seconds timeout,
                          std::chrono::milliseconds interval,
                          const std::function<std::string()>& attempt) {
      stage_start = SteadyClock::now();
      auto deadline = stage_start + timeout;
      std::string why;
      while (true) {
        if (stopped()) {
          throw std::runtime_error(
              fmt::format("{}: interrupted while waiting for stage '{}'", config.name, stage));
        }
        why = attempt();
        if (why.empty()) {
          break;
        }
        if (stage != "running") {
          int state = domain_state(connection->get(), guest.domain);
          if (state != VIR_DOMAIN_RUNNING) {
            fail(stage, timeout,
                 fmt::format("the domain stopped ({}) while waiting: {}",
                             state < 0 ? "gone" : domain_state_name(state), why));
          }
        }
        if (SteadyClock::now() >= deadline) {
          fail(stage, timeout, why);
        }
        std::this_thread::sleep_for(interval);
      }
      double seconds = std::chrono::duration<double>(SteadyClock::now() - stage_start).count();
      guest.stage_seconds[stage] = seconds;
    };

    wait_stage("running", config.timeouts.running, std::chrono::milliseconds(200), [&] {
      int state = domain_state(connection->get(), guest.domain);
      if (state == VIR_DOMAIN_RUNNING) {
        return std::string();
      }
      if (state == VIR_DOMAIN_SHUTOFF || state == VIR_DOMAIN_CRASHED || state < 0) {
        fail("running", config.timeouts.running,
             fmt::format("the domain is {}", state < 0 ? "gone" : domain_state_name(state)));
      }
      return fmt::format("the domain is {}", domain_state_name(state));
    });

    wait_stage("address", config.timeouts.address, std::chrono::seconds(1), [&] {
      if (!guest.address.empty()) {
        return std::string();
      }
      virDomainPtr domain = virDomainLookupByName(connection->get(), guest.domain.c_str());
      virDomainInterfacePtr* interfaces = nullptr;
      int count = domain ? virDomainInterfaceAddresses(domain, &interfaces,
                                                       VIR_DOMAIN_INTERFACE_ADDRESSES_SRC_LEASE, 0)
                         : -1;
      for (int i = 0; i < count; ++i) {
        for (unsigned int j = 0; j < interfaces[i]->naddrs; ++j) {
          if (guest.address.empty() && interfaces[i]->addrs[j].type == VIR_IP_ADDR_TYPE_IPV4) {
            guest.address = interfaces[i]->addrs[j].addr;
          }
        }
        virDomainInterfaceFree(interfaces[i]);
      }
      free(interfaces);
      if (domain) {
        virDomainFree(domain);
      }
      return guest.address.empty() ? fmt::format("no DHCP lease for MAC {} yet", guest.mac)
                                   : std::string();
    });

    wait_stage("ssh", config.timeouts.ssh, std::chrono::seconds(1), [&] {
      return probe_ssh_banner(guest.address, 22, std::chrono::milliseconds(2000));
    });

    std::string user = config.login == "root" ? "root" : guest.image.user;
    wait_stage("host_key", config.timeouts.host_key, std::chrono::seconds(2), [&] {
      std::string why =
          verify_host_key_and_login(guest.address, 22, guest.image.host_keys, user,
                                    guest.image.private_key, std::chrono::seconds(30));
      if (why.rfind("HOST KEY MISMATCH", 0) == 0) {
        fail("host_key", config.timeouts.host_key, why);  // retrying cannot fix this
      }
      return why;
    });

    double t_init = std::chrono::duration<double>(SteadyClock::now() - guest.started).count();
    {
      std::ofstream out(known_hosts, std::ios::app);
      for (const auto& key : guest.image.host_keys) {
        out << guest.address << " " << key.line() << "\n";
      }
    }
    GuestSshTarget target{config.name, guest.address,           22,
                          user,        guest.image.private_key, known_hosts};
    std::map<std::string, std::string> facts{
        {"accelerator", accelerator_name(guest.accelerator.accelerator)},
        {"accelerator_reason", guest.accelerator.reason},
        {"t_init_s", fmt::format("{:.1f}", t_init)},
        {"domain", guest.domain},
        {"uri", uri},
        {"image", guest.image.manifest.string()},
        {"kernel", guest.image.kernel_version},
        {"vcpus", std::to_string(config.vcpus)},
        {"memory_mib", std::to_string(config.memory_mib)},
        {"emulated_nic", guest.emulated_nic},
        {"serial_log", guest.serial_log.string()},
        // How to log in later (`ernicctl ssh GUEST` after `ernicctl up`).
        {"ssh_user", user},
        {"ssh_key", fs::absolute(guest.image.private_key).string()},
        {"ssh_known_hosts", fs::absolute(known_hosts).string()},
    };
    for (const auto& [stage, seconds] : guest.stage_seconds) {
      facts["stage_" + stage + "_s"] = fmt::format("{:.1f}", seconds);
    }
    say(fmt::format("{}: ready at {} in {:.1f} s (running {:.1f}, ssh {:.1f}, host key {:.1f})",
                    config.name, guest.address, t_init, guest.stage_seconds["running"],
                    guest.stage_seconds["ssh"], guest.stage_seconds["host_key"]));
    created.push_back(std::make_unique<LibvirtGuest>(
        connection, guest.domain, target, ssh_factory_(target), std::move(facts), t_init));
  }
  return created;
}

HostProvider& libvirt_provider() {
  static LibvirtProvider provider;
  return provider;
}

}  // namespace ernic
