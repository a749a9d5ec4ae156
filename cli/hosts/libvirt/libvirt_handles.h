#pragma once

#include <libvirt/libvirt.h>

#include <cstdlib>
#include <memory>
#include <string>

namespace ernic {

// A reference to a libvirt object, released with the object's own virXFree when it goes out
// of scope, so no path (early return, exception) leaks one.
template <auto Free>
struct LibvirtFree {
  template <typename Object>
  void operator()(Object* object) const {
    Free(object);
  }
};

using DomainHandle = std::unique_ptr<virDomain, LibvirtFree<virDomainFree>>;
using NetworkHandle = std::unique_ptr<virNetwork, LibvirtFree<virNetworkFree>>;
using StoragePoolHandle = std::unique_ptr<virStoragePool, LibvirtFree<virStoragePoolFree>>;
using StorageVolumeHandle = std::unique_ptr<virStorageVol, LibvirtFree<virStorageVolFree>>;
using StreamHandle = std::unique_ptr<virStream, LibvirtFree<virStreamFree>>;

// Text libvirt allocated for the caller (capabilities, XML descriptions): released with free().
struct LibvirtTextFree {
  void operator()(char* text) const { std::free(text); }
};
using LibvirtText = std::unique_ptr<char, LibvirtTextFree>;

// Each is null when the connection has no object of that name.
inline DomainHandle lookup_domain(virConnectPtr connection, const std::string& name) {
  return DomainHandle(virDomainLookupByName(connection, name.c_str()));
}
inline NetworkHandle lookup_network(virConnectPtr connection, const std::string& name) {
  return NetworkHandle(virNetworkLookupByName(connection, name.c_str()));
}
inline StoragePoolHandle lookup_storage_pool(virConnectPtr connection, const std::string& name) {
  return StoragePoolHandle(virStoragePoolLookupByName(connection, name.c_str()));
}
inline StorageVolumeHandle lookup_storage_volume(virStoragePoolPtr pool, const std::string& name) {
  return StorageVolumeHandle(virStorageVolLookupByName(pool, name.c_str()));
}

}  // namespace ernic
