#pragma once

#include <libvirt/libvirt.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "hosts/libvirt/libvirt_boot.h"
#include "hosts/libvirt/libvirt_resources.h"

// A remote libvirt host has none of this machine's files, so the guests' base image (and the
// kernel and initrd of direct kernel boot) are put there through libvirt's storage API: a
// directory pool of their own on that host, one volume per file named by its content's SHA-256.
// The pool is a cache: kept between runs (and by `ernicctl down`), so each image crosses the
// network once per host.
namespace ernic {

// The cache pool's default name and folder on every remote host. Its name carries no run token,
// so `down` never takes it for a run's leftover.
inline constexpr const char* kImageCachePool = "ernic-images";
inline constexpr const char* kImageCacheDir = "/var/lib/libvirt/images/ernic-images";

struct ImageCacheOptions {
  std::string pool = kImageCachePool;
  std::filesystem::path dir = kImageCacheDir;
  // Names the claim each upload holds while it runs (NAME.uploading-TOKEN), so that `down` can
  // remove what a killed run left.
  std::string run_token;
  std::function<bool()> stopped;                     // true: abort the transfer (Ctrl-C)
  std::function<void(const std::string&)> progress;  // "image: ..." lines
  CleanupStack* cleanup = nullptr;                   // a temporary volume's removal
};

// One local file as a volume of the remote cache pool.
struct CachedVolume {
  std::string name;                   // SHA256-FILENAME
  std::filesystem::path remote_path;  // the volume's file on the remote host
  bool uploaded = false;              // false: it was there already
  double upload_seconds = 0;
  double verify_seconds = 0;
};

// The cache pool, defined (autostarted) and started when absent or stopped; never removed.
void ensure_image_cache_pool(virConnectPtr connection, const ImageCacheOptions& options);

// Makes sure the remote cache pool holds `file`. A volume of the right name is reused when it
// carries its NAME.verified marker and its size and its first and last MiB are the file's;
// otherwise it is replaced. An upload holds a claim (NAME.uploading-TOKEN; its removal, with
// the unverified volume, pushed onto the cleanup stack), is read back and its SHA-256 checked,
// and only then gets the marker: an interrupted, cut off or corrupted upload is never taken
// for a cached image. Throws naming the file, the host and the reason.
CachedVolume cache_file_remotely(const LibvirtConnectionPtr& connection,
                                 const std::filesystem::path& file,
                                 const ImageCacheOptions& options);

// The guests' base disks, and their kernels and initrds when they boot one, cached on the remote
// host (each distinct file once); each guest's image then names the remote paths, and its
// disk_size is the local disk's virtual size (the overlay's capacity).
void cache_guest_images_remotely(std::vector<BootingGuest>& guests,
                                 const LibvirtConnectionPtr& connection,
                                 const ImageCacheOptions& options);

// NAME.uploading-TOKEN, the TOKEN of such a name ("" for any other volume), and NAME.verified.
std::string upload_claim_name(const std::string& final_name, const std::string& run_token);
std::string upload_claim_token(const std::string& volume);
std::string verified_marker_name(const std::string& final_name);

// What an upload under `claim` left: its volume unless verified, and the claim itself.
void remove_unfinished_upload(virConnectPtr connection, const std::string& pool_name,
                              const std::string& claim);

}  // namespace ernic
