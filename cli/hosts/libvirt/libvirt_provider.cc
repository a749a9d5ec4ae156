#include "hosts/libvirt/libvirt_provider.h"

#include <fmt/format.h>

#include <fstream>
#include <optional>
#include <set>
#include <stdexcept>

#include "base/durable_file.h"
#include "base/interrupt.h"
#include "hosts/libvirt/libvirt_accel.h"
#include "hosts/libvirt/libvirt_boot.h"
#include "hosts/libvirt/libvirt_connection.h"
#include "hosts/libvirt/libvirt_guest_region.h"
#include "hosts/libvirt/libvirt_handles.h"
#include "hosts/libvirt/libvirt_image_upload.h"
#include "hosts/libvirt/libvirt_resources.h"
#include "hosts/ssh/ssh_jump.h"
#include "image/image_builder.h"
#include "image/recipe.h"
#include "supervisor.h"

namespace ernic {
namespace fs = std::filesystem;
namespace {

// Overlays go to the scenario's pool_dir, else to libvirt's image folder under the run's name.
fs::path pool_dir_of(const LibvirtRunConfig& run, const std::string& network) {
  return run.pool_dir.empty() ? fs::path("/var/lib/libvirt/images") / network : run.pool_dir;
}

// What one create() decided for all of its guests.
struct GuestRun {
  LibvirtRunConfig config;
  std::string uri;      // one libvirt host for all guests: they share the network
  bool local = false;   // this machine's daemon (or the test driver): its files are ours
  std::string network;  // ernic-TOKEN: the network, the pool and the domains' prefix
  fs::path pool_dir;
  bool created_network = false;  // false: the guests join the existing bridge
  AcceleratorChoice detected;
  std::optional<VfioUserSupport> vfio_user;  // probed once, by the first attached guest
  RegionHandOver hand_over;                  // made once, by the first guest on a region
};

// How the run's guest regions reach QEMU's user: on this machine by chown(2), on a remote
// libvirt host through its URI's own SSH login (where the instance placed there made them).
const RegionHandOver& region_hand_over(GuestRun& run) {
  if (!run.hand_over) {
    if (run.local) {
      run.hand_over = local_region_hand_over();
    } else if (auto login = libvirt_host_login(run.config, run.uri)) {
      run.hand_over = remote_region_hand_over(*login);
    } else {
      throw std::runtime_error(fmt::format(
          "libvirt uri {}: guest regions on another machine are handed to QEMU's user over the "
          "URI's SSH login; use a qemu+ssh:// URI",
          run.uri));
    }
  }
  return run.hand_over;
}

std::string common_uri(const std::vector<BootingGuest>& guests) {
  const std::string& uri = guests.front().config.uri;
  for (const auto& guest : guests) {
    if (guest.config.uri != uri) {
      throw std::runtime_error(fmt::format(
          "hosts.{}.libvirt.uri: guests sharing one network must use one libvirt URI ({} vs {})",
          guest.config.name, guest.config.uri, uri));
    }
  }
  return uri;
}

// No systemd here: nothing else starts the daemons. They are system services, left running.
void start_local_daemons() {
  LibvirtDaemons daemons;
  daemons.ensure_running(std::chrono::seconds(60));
  std::error_code ignored;
  fs::create_directories("/var/lib/libvirt/dnsmasq", ignored);
}

using Progress = std::function<void(const std::string&)>;

// Each distinct recipe is built (or found in the cache) once; manifests are read.
void resolve_images(std::vector<BootingGuest>& guests, const LibvirtRunConfig& run,
                    const std::atomic<bool>* stop, const Progress& say) {
  std::map<std::string, GuestImage> images;
  for (auto& guest : guests) {
    const std::string& source = guest.config.image;
    if (images.count(source) == 0) {
      if (image_is_recipe(source)) {
        ImageBuildOptions options;
        options.out_dir = run.image_cache;
        options.stop = stop;
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
}

// Decided once per libvirt host: remote hosts answer with their capabilities.
AcceleratorChoice detect_accelerator(const GuestRun& run, const LibvirtConnection& connection) {
  if (run.uri.rfind("test://", 0) == 0) {
    return {Accelerator::kTcg, "test driver"};
  }
  if (run.local) {
    return detect_local_accelerator();
  }
  LibvirtText capabilities(virConnectGetCapabilities(connection.get()));
  if (!capabilities) {
    throw std::runtime_error(
        fmt::format("{}: cannot read capabilities: {}", run.uri, libvirt_error_message()));
  }
  return choose_accelerator_from_capabilities(capabilities.get());
}

// The isolated network: the bridge's own address is the subnet's first; with DHCP, leases
// come from the upper half.
NetworkSpec guest_network_spec(const std::string& name, const LibvirtRunConfig& run) {
  Subnet subnet = parse_subnet(run.subnet);
  NetworkSpec spec;
  spec.name = name;
  spec.bridge = name.substr(0, 15);
  spec.host_address = subnet_address(subnet, 1);
  spec.prefix = subnet.prefix;
  if (run.dhcp) {
    std::uint32_t size = std::uint32_t{1} << (32 - subnet.prefix);
    spec.dhcp_start = subnet_address(subnet, size / 2);
    spec.dhcp_end = subnet_address(subnet, size - 2);
  }
  return spec;
}

// The guest's names, address, console and accelerator (kvm asked for but unusable throws).
void plan_guest(BootingGuest& guest, std::size_t index, const std::string& address,
                const GuestRun& run, const ProviderContext& context) {
  const auto& config = guest.config;
  guest.domain = fmt::format("{}-{}", run.network, config.name);
  guest.mac = guest_mac(context.run_token, static_cast<int>(index));
  guest.address = run.config.dhcp ? std::string() : address;
  guest.serial_log = (run.local ? context.run_dir : run.pool_dir) / (config.name + ".serial.log");
  guest.accelerator = run.detected;
  if (config.accelerator == "tcg") {
    guest.accelerator = {Accelerator::kTcg, "the scenario asks for TCG"};
  } else if (config.accelerator == "kvm" && run.detected.accelerator != Accelerator::kKvm) {
    throw std::runtime_error(fmt::format("hosts.{}.libvirt.accelerator: kvm was asked for, but {}",
                                         config.name, run.detected.reason));
  }
}

// The overlay's size is the base image's: read from the disk here; remotely, the manifest's or
// the local disk's before its upload (cache_guest_images_remotely).
OverlaySpec guest_overlay(const BootingGuest& guest, const GuestRun& run) {
  OverlaySpec overlay;
  overlay.guest = guest.config.name;
  overlay.pool = run.network;
  overlay.pool_dir = run.pool_dir;
  overlay.volume = guest.config.name + ".qcow2";
  overlay.base = guest.image.disk;
  overlay.base_format = guest.image.disk_format;
  if (run.local) {
    overlay.capacity_bytes = qcow2_virtual_size(guest.image.disk);
  } else {
    overlay.capacity_bytes = guest.image.disk_size;
    if (overlay.capacity_bytes == 0) {
      throw std::runtime_error(
          fmt::format("hosts.{}: the manifest of {} gives no disk size, "
                      "needed for an overlay on a remote host",
                      guest.config.name, guest.image.manifest.string()));
    }
  }
  return overlay;
}

// An emulator instance is attached when QEMU has a vfio-user client device; otherwise the
// guest's emulated_nic fact says why not.
void attach_emulator(BootingGuest& guest, DomainSpec& spec, GuestRun& run, const Progress& say) {
  const auto& socket = guest.config.emulator_socket;
  if (socket.empty()) {
    return;
  }
  if (!run.vfio_user) {
    run.vfio_user = run.local ? detect_vfio_user_support()
                              : VfioUserSupport{false,
                                                "QEMU's devices cannot be listed on a remote "
                                                "libvirt host"};
  }
  if (run.vfio_user->available) {
    spec.vfio_user_socket = socket;
    guest.emulated_nic = "attached: " + socket;
  } else {
    guest.emulated_nic = "not attached: " + run.vfio_user->reason;
    say(fmt::format("{}: emulated NIC not attached: {}", guest.config.name, run.vfio_user->reason));
  }
}

DomainSpec guest_domain_spec(const BootingGuest& guest, const GuestRun& run, const fs::path& disk) {
  const auto& config = guest.config;
  DomainSpec spec;
  spec.name = guest.domain;
  spec.accelerator = guest.accelerator.accelerator;
  spec.vcpus = config.vcpus;
  spec.memory_mib = config.memory_mib;
  spec.disk = disk;
  if (config.kernel_boot) {
    spec.kernel = guest.image.kernel;
    spec.initrd = guest.image.initrd;
    spec.kernel_cmdline = guest.image.kernel_cmdline;
    spec.kernel_cmdline += " systemd.hostname=" + config.name;
    if (!guest.address.empty() && !guest.image.static_address_arg.empty()) {
      spec.kernel_cmdline += fmt::format(" {}={}/{}", guest.image.static_address_arg, guest.address,
                                         parse_subnet(run.config.subnet).prefix);
    }
  }
  if (run.created_network) {
    spec.network = run.network;
  } else {
    spec.bridge = run.config.bridge;
  }
  spec.mac = guest.mac;
  spec.serial_log = guest.serial_log;
  return spec;
}

// The jump host make_ready_guest recorded for a remote host's guest.
std::optional<GuestJump> recorded_jump(const std::map<std::string, std::string>& facts) {
  auto jump = facts.find("ssh_jump");
  if (jump == facts.end()) {
    return std::nullopt;
  }
  GuestJump recorded{parse_ssh_destination(jump->second), {}};
  if (auto key = facts.find("ssh_jump_key"); key != facts.end()) {
    recorded.host.key = key->second;
  }
  if (auto known_hosts = facts.find("ssh_jump_known_hosts"); known_hosts != facts.end()) {
    recorded.known_hosts = known_hosts->second;
  }
  return recorded;
}

}  // namespace

LibvirtProvider::LibvirtProvider(SshHostFactory ssh_factory)
    : ssh_factory_(std::move(ssh_factory)) {}

void LibvirtProvider::say(const std::string& line) const {
  if (progress_) {
    progress_(line);
  }
}

bool LibvirtProvider::stopped() const {
  return (stop_ != nullptr && stop_->load()) || Interrupt::requested();
}

void LibvirtProvider::check(const std::vector<HostSpec>& hosts, const Config& scenario,
                            Diagnostics& out) const {
  std::vector<std::string> requested;
  LibvirtRunConfig run;
  try {
    run = parse_libvirt_run(scenario);
  } catch (const std::exception& error) {
    out.push_back(scenario.diagnostic("libvirt", error.what()));
    return;
  }
  for (const auto& host : hosts) {
    try {
      auto config = parse_libvirt_guest(host, base_dir_);
      requested.push_back(config.address);
      if (!config.kernel_boot && image_is_recipe(config.image)) {
        throw std::runtime_error(fmt::format(
            "hosts.{}.libvirt.kernel_boot: images built from recipes have no bootloader; they boot "
            "with kernel_boot: true",
            host.name));
      }
      if (served_by_embedded_instance(scenario, config.instance)) {
        if (auto why = guest_region_unsupported(host.name, config.uri); !why.empty()) {
          out.push_back(host.config.diagnostic("instance", why));
        }
      }
    } catch (const std::exception& error) {
      out.push_back(host.config.diagnostic("libvirt", error.what()));
    }
  }
  if (run.bridge.empty() && !run.dhcp) {
    try {
      assign_guest_addresses(requested, run.subnet);
    } catch (const std::exception& error) {
      out.push_back(scenario.object("libvirt").diagnostic("network", error.what()));
    }
  }
}

std::vector<std::string> LibvirtProvider::planned_addresses(const std::vector<HostSpec>& hosts,
                                                            const Config& scenario) const {
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
  fs::path pool_dir = pool_dir_of(run, network);
  std::set<std::string> images;
  for (const auto& guest : guests) {
    if (image_is_recipe(guest.image) && images.insert(guest.image).second) {
      lines.push_back(fmt::format("ernicctl image build {} --out {}  # skipped when cached",
                                  guest.image, run.image_cache.string()));
    }
  }
  if (!guests.empty() && !is_local_system_uri(guests.front().uri) &&
      guests.front().uri.rfind("test://", 0) != 0) {
    lines.push_back(fmt::format(
        "virsh -c {} vol-create + vol-upload <base disk, kernel, initrd> into pool {} ({}) as "
        "volumes named by their SHA-256, read back and checked  # skipped when cached there",
        guests.front().uri, kImageCachePool, kImageCacheDir));
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
            ? (served_by_embedded_instance(context.scenario, guest.instance)
                   ? fmt::format(
                         ", ivshmem-plain device on {}{} (owned by QEMU's user{})",
                         emu::guest_region_path(context.run_token, guest.instance).string(),
                         is_local_system_uri(guest.uri) ? ""
                                                        : " of " + libvirt_uri_machine(guest.uri),
                         is_local_system_uri(guest.uri) ? "" : ": chown over the URI's SSH login")
                   : std::string())
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

void LibvirtProvider::check_machines(const std::vector<HostSpec>& hosts,
                                     const Config& scenario) const {
  const LibvirtRunConfig run = parse_libvirt_run(scenario);
  std::map<std::string, std::string> probed;  // URI -> its QEMU's `-device help`
  for (const auto& host : hosts) {
    const LibvirtGuestConfig guest = parse_libvirt_guest(host, base_dir_);
    auto login = libvirt_host_login(run, guest.uri);
    if (!served_by_embedded_instance(scenario, guest.instance) || !login) {
      continue;  // this machine's QEMU was probed by check()
    }
    if (!probed.contains(guest.uri)) {
      try {
        probed[guest.uri] = run_on_libvirt_host(*login, "qemu-system-x86_64 -device help");
      } catch (const std::exception& error) {
        throw std::runtime_error(fmt::format(
            "hosts.{}: cannot ask QEMU on {} whether it has ivshmem-plain, which guests on "
            "embedded instances need: {}",
            host.name, libvirt_uri_machine(guest.uri), error.what()));
      }
    }
    if (auto why = ivshmem_missing(host.name, libvirt_uri_machine(guest.uri), probed[guest.uri]);
        !why.empty()) {
      throw std::runtime_error(why);
    }
  }
}

std::string LibvirtProvider::machine_of(const HostSpec& host) const {
  try {
    return libvirt_uri_machine(parse_libvirt_guest(host, base_dir_).uri);
  } catch (const std::exception&) {
    return "";  // check() reports the entry
  }
}

std::vector<std::unique_ptr<Host>> LibvirtProvider::create(const std::vector<HostSpec>& hosts,
                                                           ProviderContext& context) {
  if (context.cleanup == nullptr) {
    throw std::logic_error("libvirt provider: no cleanup stack");
  }
  CleanupStack& cleanup = *context.cleanup;
  auto progress = [this](const std::string& line) { say(line); };
  GuestRun run;
  run.config = parse_libvirt_run(context.scenario);
  std::vector<BootingGuest> guests;
  std::vector<std::string> requested;
  for (const auto& host : hosts) {
    guests.push_back({.config = parse_libvirt_guest(host, base_dir_)});
    requested.push_back(guests.back().config.address);
  }
  if (guests.empty()) {
    return {};
  }
  auto addresses = assign_guest_addresses(requested, run.config.subnet);
  run.uri = common_uri(guests);
  run.local = is_local_system_uri(run.uri) || run.uri.rfind("test://", 0) == 0;
  // The guests' network exists only on the libvirt host: a remote host's guests are reached
  // through it (or the scenario's `jump:`).
  std::optional<GuestJump> jump = guest_jump(run.config, run.uri);
  for (auto& guest : guests) {
    guest.jump = jump;
  }
  if (is_local_system_uri(run.uri)) {
    start_local_daemons();
  }
  auto connection = std::make_shared<LibvirtConnection>(run.uri);
  resolve_images(guests, run.config, stop_, progress);
  if (!run.local) {  // its files are not there: put them in the host's image cache pool
    ImageCacheOptions cache{.run_token = context.run_token,
                            .stopped = [this] { return stopped(); },
                            .progress = progress,
                            .cleanup = &cleanup};
    cache_guest_images_remotely(guests, connection, cache);
  }
  run.detected = detect_accelerator(run, *connection);
  run.network = "ernic-" + context.run_token;
  run.pool_dir = pool_dir_of(run.config, run.network);

  // The network, then the pool and overlays, then the domains: each pushes its own undo.
  if (run.config.bridge.empty()) {
    create_network(connection, guest_network_spec(run.network, run.config), run.config.subnet,
                   cleanup);
    run.created_network = true;
    say(fmt::format("network {} ({}) created", run.network, run.config.subnet));
  }
  create_storage_pool(connection, run.network, run.pool_dir, cleanup);
  for (std::size_t i = 0; i < guests.size(); ++i) {
    auto& guest = guests[i];
    plan_guest(guest, i, addresses[i], run, context);
    OverlaySpec overlay = guest_overlay(guest, run);
    create_overlay(connection, overlay, cleanup);
    DomainSpec spec = guest_domain_spec(guest, run, run.pool_dir / overlay.volume);
    attach_emulator(guest, spec, run, progress);
    if (served_by_embedded_instance(context.scenario, guest.config.instance)) {
      if (auto why = guest_region_unsupported(guest.config.name, run.uri); !why.empty()) {
        throw std::runtime_error(why);
      }
      LibvirtText capabilities(virConnectGetCapabilities(connection->get()));
      attach_guest_region(guest.config.name, context.run_token, guest.config.instance,
                          capabilities
                              ? qemu_dac_owner(capabilities.get(), guest.accelerator.accelerator)
                              : std::nullopt,
                          region_hand_over(run), spec);
      guest.emulated_nic = "guest region /dev/shm/" + spec.guest_region;
    }
    std::string xml = domain_xml(spec);
    // A copy for a person to read: a full run directory must not stop the guest.
    if (auto reason = write_file_durably_or_reason(
            context.run_dir / (guest.config.name + ".domain.xml"), xml);
        !reason.empty()) {
      say("warning: " + reason);
    }
    guest.started =
        define_and_start_domain(connection, guest.config.name, guest.domain, xml, cleanup);
    say(fmt::format("{}: domain {} started ({}, {} vCPU, {} MiB)", guest.config.name, guest.domain,
                    accelerator_name(guest.accelerator.accelerator), guest.config.vcpus,
                    guest.config.memory_mib));
  }

  // The guests boot in parallel; each waits through its own stages in turn.
  std::vector<std::unique_ptr<Host>> created;
  fs::path known_hosts = context.run_dir / "libvirt_known_hosts";
  for (auto& guest : guests) {
    wait_until_ready(guest, connection->get(), [this] { return stopped(); });
    auto ready = make_ready_guest(guest, connection, known_hosts, ssh_factory_);
    say(fmt::format("{}: ready at {} in {:.1f} s (running {:.1f}, ssh {:.1f}, host key {:.1f})",
                    guest.config.name, guest.address, ready->t_init_s(),
                    guest.stage_seconds["running"], guest.stage_seconds["ssh"],
                    guest.stage_seconds["host_key"]));
    created.push_back(std::move(ready));
  }
  return created;
}

std::vector<std::unique_ptr<Host>> LibvirtProvider::attach(
    const std::vector<HostSpec>& hosts, const std::vector<AttachedHost>& recorded,
    ProviderContext& /*context*/) {
  std::map<std::string, LibvirtConnectionPtr> connections;  // by URI
  std::vector<std::unique_ptr<Host>> attached;
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    const auto& facts = recorded[i].facts;
    auto fact = [&](const char* key) {
      auto it = facts.find(key);
      if (it == facts.end()) {
        throw std::runtime_error(
            fmt::format("guest {}: up recorded no {}; bring it up again", hosts[i].name, key));
      }
      return it->second;
    };
    const std::string uri = fact("uri");
    const std::string domain = fact("domain");
    if (std::string condition = host_condition(facts); condition != "up") {
      throw std::runtime_error(
          fmt::format("guest {}: libvirt domain {} is {}", hosts[i].name, domain, condition));
    }
    LibvirtConnectionPtr& connection = connections[uri];
    if (!connection) {
      connection = std::make_shared<LibvirtConnection>(uri);
    }
    GuestSshTarget target{hosts[i].name,       recorded[i].address, 22,
                          fact("ssh_user"),    fact("ssh_key"),     fact("ssh_known_hosts"),
                          recorded_jump(facts)};
    attached.push_back(std::make_unique<LibvirtGuest>(connection, domain, target,
                                                      ssh_factory_(target), facts, 0.0));
  }
  return attached;
}

std::string LibvirtProvider::host_condition(const std::map<std::string, std::string>& facts) const {
  auto domain = facts.find("domain");
  if (domain == facts.end()) {
    return "unknown";
  }
  auto uri = facts.find("uri");
  return domain_condition(uri == facts.end() ? "qemu:///system" : uri->second, domain->second);
}

HostProvider& libvirt_provider() {
  static LibvirtProvider provider;
  return provider;
}

}  // namespace ernic
