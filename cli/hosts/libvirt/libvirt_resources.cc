#include "hosts/libvirt/libvirt_resources.h"

#include <fmt/format.h>

#include <cstdlib>
#include <stdexcept>
#include <string_view>

#include "hosts/libvirt/libvirt_connection.h"
#include "hosts/libvirt/libvirt_handles.h"

namespace ernic {

void create_network(const LibvirtConnectionPtr& connection, const NetworkSpec& spec,
                    const std::string& subnet, CleanupStack& cleanup) {
  std::string xml = network_xml(spec);
  NetworkHandle created(virNetworkCreateXML(connection->get(), xml.c_str()));
  if (!created) {
    throw std::runtime_error(fmt::format("cannot create libvirt network {} ({}): {}", spec.name,
                                         subnet, libvirt_error_message()));
  }
  cleanup.push(fmt::format("destroy libvirt network {}", spec.name),
               [connection, name = spec.name] {
                 if (NetworkHandle network = lookup_network(connection->get(), name)) {
                   if (virNetworkDestroy(network.get()) != 0) {
                     throw std::runtime_error(libvirt_error_message());
                   }
                 }
               });
}

void create_storage_pool(const LibvirtConnectionPtr& connection, const std::string& name,
                         const std::filesystem::path& dir, CleanupStack& cleanup) {
  std::string xml = storage_pool_xml(name, dir);
  StoragePoolHandle pool(virStoragePoolDefineXML(connection->get(), xml.c_str(), 0));
  if (!pool) {
    throw std::runtime_error(fmt::format("cannot define storage pool {} at {}: {}", name,
                                         dir.string(), libvirt_error_message()));
  }
  cleanup.push(fmt::format("remove storage pool {} ({})", name, dir.string()), [connection, name] {
    remove_storage_pool(connection->get(), name, PoolContents::kSerialLogs);
  });
  if (virStoragePoolBuild(pool.get(), 0) != 0 || virStoragePoolCreate(pool.get(), 0) != 0) {
    throw std::runtime_error(fmt::format("cannot create storage pool {} at {}: {}", name,
                                         dir.string(), libvirt_error_message()));
  }
}

void remove_storage_pool(virConnectPtr connection, const std::string& name, PoolContents contents) {
  StoragePoolHandle found = lookup_storage_pool(connection, name);
  if (!found) {
    return;
  }
  if (virStoragePoolIsActive(found.get()) == 1) {
    // What is left in it: a remote guest's serial log, volumes of a killed run.
    virStoragePoolRefresh(found.get(), 0);
    virStorageVolPtr* volumes = nullptr;
    int count = virStoragePoolListAllVolumes(found.get(), &volumes, 0);
    for (int i = 0; i < count; ++i) {
      StorageVolumeHandle volume(volumes[i]);
      std::string_view volume_name = virStorageVolGetName(volume.get());
      if (contents == PoolContents::kEverything || volume_name.ends_with(".serial.log")) {
        virStorageVolDelete(volume.get(), 0);
      }
    }
    std::free(volumes);
    virStoragePoolDestroy(found.get());
  }
  virStoragePoolDelete(found.get(), 0);  // the folder, now empty
  if (virStoragePoolIsPersistent(found.get()) == 1 && virStoragePoolUndefine(found.get()) != 0) {
    throw std::runtime_error(libvirt_error_message());
  }
}

void create_overlay(const LibvirtConnectionPtr& connection, const OverlaySpec& spec,
                    CleanupStack& cleanup) {
  std::string xml =
      overlay_volume_xml(spec.volume, spec.base, spec.base_format, spec.capacity_bytes);
  StoragePoolHandle pool = lookup_storage_pool(connection->get(), spec.pool);
  StorageVolumeHandle created(pool ? virStorageVolCreateXML(pool.get(), xml.c_str(), 0) : nullptr);
  if (!created) {
    throw std::runtime_error(fmt::format("hosts.{}: cannot create the overlay on {}: {}",
                                         spec.guest, spec.base.string(), libvirt_error_message()));
  }
  cleanup.push(fmt::format("delete overlay {}/{}", spec.pool_dir.string(), spec.volume),
               [connection, pool_name = spec.pool, volume = spec.volume] {
                 StoragePoolHandle found = lookup_storage_pool(connection->get(), pool_name);
                 StorageVolumeHandle overlay =
                     found ? lookup_storage_volume(found.get(), volume) : nullptr;
                 if (overlay && virStorageVolDelete(overlay.get(), 0) != 0) {
                   throw std::runtime_error(libvirt_error_message());
                 }
               });
}

std::chrono::steady_clock::time_point define_and_start_domain(
    const LibvirtConnectionPtr& connection, const std::string& guest, const std::string& domain,
    const std::string& xml, CleanupStack& cleanup) {
  if (lookup_domain(connection->get(), domain)) {
    throw std::runtime_error(fmt::format(
        "libvirt domain {0} already exists (left over from a killed run? `virsh destroy {0}; "
        "virsh undefine {0}`)",
        domain));
  }
  DomainHandle defined(virDomainDefineXML(connection->get(), xml.c_str()));
  if (!defined) {
    throw std::runtime_error(fmt::format("hosts.{}: libvirt rejected domain {}: {}", guest, domain,
                                         libvirt_error_message()));
  }
  cleanup.push(fmt::format("undefine libvirt domain {}", domain), [connection, domain] {
    DomainHandle found = lookup_domain(connection->get(), domain);
    if (found && virDomainUndefine(found.get()) != 0) {
      throw std::runtime_error(libvirt_error_message());
    }
  });
  cleanup.push(fmt::format("destroy libvirt domain {}", domain), [connection, domain] {
    DomainHandle found = lookup_domain(connection->get(), domain);
    if (found && virDomainIsActive(found.get()) == 1) {
      virDomainDestroy(found.get());
    }
  });
  auto started = std::chrono::steady_clock::now();
  if (virDomainCreate(defined.get()) != 0) {
    throw std::runtime_error(fmt::format("hosts.{}: domain {} did not start: {}", guest, domain,
                                         libvirt_error_message()));
  }
  return started;
}

int domain_state(virConnectPtr connection, const std::string& domain) {
  DomainHandle found = lookup_domain(connection, domain);
  if (!found) {
    return -1;
  }
  int state = -1;
  int reason = 0;
  if (virDomainGetState(found.get(), &state, &reason, 0) != 0) {
    state = -1;
  }
  return state;
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

std::string domain_lease_address(virConnectPtr connection, const std::string& domain) {
  DomainHandle found = lookup_domain(connection, domain);
  virDomainInterfacePtr* interfaces = nullptr;
  int count = found ? virDomainInterfaceAddresses(found.get(), &interfaces,
                                                  VIR_DOMAIN_INTERFACE_ADDRESSES_SRC_LEASE, 0)
                    : -1;
  std::string address;
  for (int i = 0; i < count; ++i) {
    for (unsigned int j = 0; j < interfaces[i]->naddrs; ++j) {
      if (address.empty() && interfaces[i]->addrs[j].type == VIR_IP_ADDR_TYPE_IPV4) {
        address = interfaces[i]->addrs[j].addr;
      }
    }
    virDomainInterfaceFree(interfaces[i]);
  }
  std::free(interfaces);
  return address;
}

std::string domain_condition(const std::string& uri, const std::string& domain) {
  try {
    LibvirtConnection connection(uri);
    DomainHandle found = lookup_domain(connection.get(), domain);
    if (!found) {
      return "gone";
    }
    return virDomainIsActive(found.get()) == 1 ? "up" : "stopped";
  } catch (const std::exception&) {
    return "unknown";
  }
}

}  // namespace ernic
