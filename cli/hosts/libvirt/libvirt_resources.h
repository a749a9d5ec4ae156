#pragma once

#include <libvirt/libvirt.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "base/cleanup_stack.h"
#include "hosts/libvirt/libvirt_domain.h"

namespace ernic {

class LibvirtConnection;
using LibvirtConnectionPtr = std::shared_ptr<LibvirtConnection>;

// The libvirt objects a run's guests live in. Each function creates one resource and pushes
// its undo onto the cleanup stack the moment the resource exists, before anything else can
// fail, so an error or Ctrl-C at any later point leaves nothing behind. The undo actions hold
// the connection and look the object up by name, so they work whatever became of the handle.

// A transient network (`virsh net-create`); undo destroys it, which also removes it.
void create_network(const LibvirtConnectionPtr& connection, const NetworkSpec& spec,
                    const std::string& subnet, CleanupStack& cleanup);

// A directory pool at `dir`, defined, built and started; undo stops it, deletes its (by then
// empty) folder and undefines it.
void create_storage_pool(const LibvirtConnectionPtr& connection, const std::string& name,
                         const std::filesystem::path& dir, CleanupStack& cleanup);

// Deletes what is left in the pool (every file, or only guests' serial logs: a pool_dir may be a
// folder of the user's), stops it, removes its folder when empty and undefines it; nothing when
// there is no such pool. Throws when it cannot be undefined.
enum class PoolContents { kEverything, kSerialLogs };
void remove_storage_pool(virConnectPtr connection, const std::string& name, PoolContents contents);

// A qcow2 overlay volume in the pool, backed by the base image; undo deletes the volume.
struct OverlaySpec {
  std::string guest;  // for error messages
  std::string pool;
  std::filesystem::path pool_dir;
  std::string volume;
  std::filesystem::path base;
  std::string base_format = "qcow2";
  std::uint64_t capacity_bytes = 0;
};
void create_overlay(const LibvirtConnectionPtr& connection, const OverlaySpec& spec,
                    CleanupStack& cleanup);

// Defines the domain from `xml` (refusing a name that already exists), pushes its undefine and
// then its destroy, and starts it. Returns when it was started, the origin of T_init.
std::chrono::steady_clock::time_point define_and_start_domain(
    const LibvirtConnectionPtr& connection, const std::string& guest, const std::string& domain,
    const std::string& xml, CleanupStack& cleanup);

// A domain's libvirt state (VIR_DOMAIN_RUNNING, ...) by name, or -1 when it no longer exists.
int domain_state(virConnectPtr connection, const std::string& domain);
// "running", "shut off", ...: for messages.
const char* domain_state_name(int state);
// The first IPv4 address of the domain's DHCP leases, or "" while it has none.
std::string domain_lease_address(virConnectPtr connection, const std::string& domain);

// What `ernicctl status` says of a guest domain: "up" (active), "stopped" (defined, not
// running), "gone" (no such domain) or "unknown" (libvirt at `uri` does not answer).
std::string domain_condition(const std::string& uri, const std::string& domain);

}  // namespace ernic
