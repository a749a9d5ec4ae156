#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "base/schema.h"
#include "hosts/provider.h"
#include "hosts/ssh/ssh_connection.h"

namespace ernic {

// Each readiness stage has its own deadline, counted from the end of the stage before.
struct StageTimeouts {
  std::chrono::seconds running{60};
  std::chrono::seconds address{120};
  std::chrono::seconds ssh{600};  // TCG boot under load
  std::chrono::seconds host_key{120};
};

// One `provider: libvirt` host entry, parsed.
struct LibvirtGuestConfig {
  std::string name;
  std::string address;  // empty: the provider assigns one from the subnet
  std::string uri = "qemu:///system";
  // A recipe (.yaml: built or taken from the image cache) or a manifest (.json: ours or
  // rocm-ernic's vm-info.json).
  std::string image = "images/debian12-rdma.yaml";
  std::string qcow2;  // overrides the manifest's disk
  int vcpus = 1;
  std::uint64_t memory_mib = 1024;
  bool kernel_boot = true;
  std::string accelerator = "auto";  // auto, kvm, tcg
  std::string login = "root";        // root (when the image allows it) or user
  std::string emulator_socket;       // an emulator instance's vfio-user socket
  int instance = 0;                  // `instance: N` of the host entry; 0: none
  StageTimeouts timeouts;
};

// The host a remote libvirt host's guests are reached through over SSH.
struct GuestJump {
  SshEndpoint host;
  std::filesystem::path known_hosts;  // its host key; empty: ~/.ssh/known_hosts
};

// The top-level `libvirt:` section: the network the run's guests share.
struct LibvirtRunConfig {
  std::string subnet = "192.168.77.0/24";
  std::string bridge;  // an existing host bridge instead of a network ernicctl creates
  bool dhcp = false;   // addresses from libvirt's dnsmasq instead of static ones
  std::filesystem::path image_cache = "/var/cache/ernicctl/images";
  std::filesystem::path pool_dir;          // overlays; empty: /var/lib/libvirt/images/ernic-TOKEN
  std::optional<SshEndpoint> jump;         // `jump:`, its key from `jump_key:`
  std::filesystem::path jump_key;          // also for the jump a qemu+ssh URI implies
  std::filesystem::path jump_known_hosts;  // likewise
};

// From the entry's and the scenario's typed `libvirt:` keys; what the schema cannot say (memory
// below 128MiB, an empty image, a bad subnet prefix) throws std::runtime_error naming the host
// and the key.
LibvirtGuestConfig parse_libvirt_guest(const HostSpec& host, const std::filesystem::path& base_dir);
LibvirtRunConfig parse_libvirt_run(const Config& scenario);

// How the guests of `uri` are reached: through the scenario's `jump:`, else through the user and
// host of an SSH URI (qemu+ssh://user@host:port/system, its keyfile= and known_hosts=
// parameters too); directly (nullopt) for local URIs and other transports.
std::optional<GuestJump> guest_jump(const LibvirtRunConfig& run, const std::string& uri);
// The login to the libvirt host of `uri` itself (its qemu+ssh user, host, keyfile= and
// known_hosts=, or the scenario's jump_key and jump_known_hosts), whatever `jump:` says; nullopt
// for a URI of this machine or of another transport.
std::optional<GuestJump> libvirt_host_login(const LibvirtRunConfig& run, const std::string& uri);
// The machine `uri` names: "" for this machine (qemu:///system, test://), else its host.
std::string libvirt_uri_machine(const std::string& uri);

// Whether the guest's image is a recipe (built, cached) rather than a manifest.
bool image_is_recipe(const std::string& image);

// An IPv4 subnet such as 192.168.77.0/24; throws naming `libvirt.network.subnet` otherwise.
struct Subnet {
  std::uint32_t network = 0;  // host byte order
  int prefix = 24;
};
Subnet parse_subnet(const std::string& text);
// Host `offset` of the subnet (1 = the first address) as text.
std::string subnet_address(const Subnet& subnet, std::uint32_t offset);

// Guest addresses: the entry's own, or the subnet's .10, .11, ... in host order.
std::vector<std::string> assign_guest_addresses(const std::vector<std::string>& requested,
                                                const std::string& subnet);

// The schemas of a host entry's `libvirt:` keys and of the scenario's top-level `libvirt:`.
const ObjectSchema& libvirt_host_schema();
const ObjectSchema& libvirt_run_schema();

}  // namespace ernic
