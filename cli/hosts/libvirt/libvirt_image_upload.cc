#include "hosts/libvirt/libvirt_image_upload.h"

#include <fmt/format.h>

#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <stdexcept>

#include "hosts/libvirt/libvirt_connection.h"
#include "hosts/libvirt/libvirt_domain.h"
#include "hosts/libvirt/libvirt_handles.h"
#include "image/guest_image.h"
#include "image/image_digest.h"

namespace ernic {
namespace fs = std::filesystem;
namespace {

using UploadClock = std::chrono::steady_clock;
constexpr std::size_t kStreamChunk = 1 << 20;
// How much of each end of a cached volume is compared with the local file.
constexpr std::uint64_t kSampledBytes = 1 << 20;

double elapsed_since(UploadClock::time_point start) {
  return std::chrono::duration<double>(UploadClock::now() - start).count();
}

double mebibytes(std::uint64_t bytes) {
  return static_cast<double>(bytes) / (1 << 20);
}

// The remote host's own name, for messages; the URI when it does not say.
std::string remote_host_name(const LibvirtConnection& connection) {
  LibvirtText name(virConnectGetHostname(connection.get()));
  return name ? std::string(name.get()) : connection.uri();
}

std::string raw_volume_xml(const std::string& name, std::uint64_t capacity) {
  return fmt::format(
      "<volume>\n  <name>{}</name>\n  <capacity unit='bytes'>{}</capacity>\n"
      "  <allocation unit='bytes'>0</allocation>\n  <target>\n    <format type='raw'/>\n"
      "    <permissions>\n      <mode>0644</mode>\n    </permissions>\n  </target>\n"
      "</volume>\n",
      xml_escape(name), capacity);
}

StoragePoolHandle cache_pool(const LibvirtConnection& connection,
                             const ImageCacheOptions& options) {
  StoragePoolHandle pool = lookup_storage_pool(connection.get(), options.pool);
  if (!pool) {
    throw std::runtime_error(fmt::format("{}: the image cache pool {} is gone: {}",
                                         connection.uri(), options.pool, libvirt_error_message()));
  }
  return pool;
}

void delete_volume_named(virStoragePoolPtr pool, const std::string& name) {
  if (StorageVolumeHandle volume = lookup_storage_volume(pool, name)) {
    if (virStorageVolDelete(volume.get(), 0) != 0) {
      throw std::runtime_error(
          fmt::format("cannot delete volume {}: {}", name, libvirt_error_message()));
    }
  }
}

// The volume's file size (VIR_STORAGE_VOL_GET_PHYSICAL puts it in `allocation`).
std::uint64_t physical_size(virStorageVolPtr volume) {
  virStorageVolInfo info{};
  if (virStorageVolGetInfoFlags(volume, &info, VIR_STORAGE_VOL_GET_PHYSICAL) != 0) {
    throw std::runtime_error(libvirt_error_message());
  }
  return info.allocation;
}

// Calls `consume` with each chunk of the volume's bytes [offset, offset + length).
void download_volume(virConnectPtr connection, virStorageVolPtr volume, std::uint64_t offset,
                     std::uint64_t length, const std::function<void(const char*, int)>& consume) {
  StreamHandle stream(virStreamNew(connection, 0));
  if (!stream || virStorageVolDownload(volume, stream.get(), offset, length, 0) != 0) {
    throw std::runtime_error(fmt::format("cannot read the volume: {}", libvirt_error_message()));
  }
  std::vector<char> chunk(kStreamChunk);
  for (;;) {
    int got = virStreamRecv(stream.get(), chunk.data(), chunk.size());
    if (got < 0) {
      std::string error = libvirt_error_message();
      virStreamAbort(stream.get());
      throw std::runtime_error(fmt::format("reading the volume failed: {}", error));
    }
    if (got == 0) {
      break;
    }
    consume(chunk.data(), got);
  }
  if (virStreamFinish(stream.get()) != 0) {
    throw std::runtime_error(fmt::format("reading the volume failed: {}", libvirt_error_message()));
  }
}

std::string read_local(const fs::path& file, std::uint64_t offset, std::uint64_t length) {
  std::ifstream in(file, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(offset));
  std::string bytes(length, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(length));
  bytes.resize(static_cast<std::size_t>(in.gcount()));
  return bytes;
}

// Why a volume of the right name is not the file ("" when its size and both ends match).
std::string cached_volume_mismatch(virConnectPtr connection, virStorageVolPtr volume,
                                   const fs::path& file, std::uint64_t size) {
  std::uint64_t found = physical_size(volume);
  if (found != size) {
    return fmt::format("{} bytes instead of {}", found, size);
  }
  std::uint64_t sample = std::min(size, kSampledBytes);
  for (std::uint64_t offset : {std::uint64_t{0}, size - sample}) {
    std::string remote;
    download_volume(connection, volume, offset, sample,
                    [&](const char* data, int length) { remote.append(data, length); });
    if (remote != read_local(file, offset, sample)) {
      return fmt::format("its bytes at offset {} differ from the file's", offset);
    }
  }
  return "";
}

// Sends the file into the volume in chunks, saying how far it got every tenth.
void upload_into(virConnectPtr connection, virStorageVolPtr volume, const fs::path& file,
                 std::uint64_t size, const std::string& host, const ImageCacheOptions& options) {
  std::ifstream in(file, std::ios::binary);
  StreamHandle stream(virStreamNew(connection, 0));
  if (!in || !stream || virStorageVolUpload(volume, stream.get(), 0, size, 0) != 0) {
    throw std::runtime_error(fmt::format("cannot start the upload: {}", libvirt_error_message()));
  }
  std::vector<char> chunk(kStreamChunk);
  std::uint64_t sent = 0;
  int reported_tenths = 0;
  auto start = UploadClock::now();
  while (sent < size) {
    if (options.stopped && options.stopped()) {
      virStreamAbort(stream.get());
      throw std::runtime_error("interrupted");
    }
    in.read(chunk.data(),
            static_cast<std::streamsize>(std::min<std::uint64_t>(chunk.size(), size - sent)));
    auto length = static_cast<std::size_t>(in.gcount());
    if (length == 0) {
      virStreamAbort(stream.get());
      throw std::runtime_error(fmt::format("{} ended after {} bytes", file.string(), sent));
    }
    for (std::size_t done = 0; done < length;) {
      int wrote = virStreamSend(stream.get(), chunk.data() + done, length - done);
      if (wrote < 0) {
        std::string error = libvirt_error_message();
        virStreamAbort(stream.get());
        throw std::runtime_error(error);
      }
      done += static_cast<std::size_t>(wrote);
    }
    sent += length;
    int tenths = static_cast<int>(sent * 10 / size);
    if (tenths > reported_tenths && tenths < 10 && options.progress) {
      reported_tenths = tenths;
      options.progress(
          fmt::format("image: uploading {} to {}: {}% ({:.0f} of {:.0f} MiB, "
                      "{:.1f} MiB/s)",
                      file.filename().string(), host, tenths * 10, mebibytes(sent), mebibytes(size),
                      mebibytes(sent) / elapsed_since(start)));
    }
  }
  if (virStreamFinish(stream.get()) != 0) {
    throw std::runtime_error(libvirt_error_message());
  }
}

std::string volume_sha256(virConnectPtr connection, virStorageVolPtr volume, std::uint64_t size) {
  Sha256Stream digest;
  download_volume(connection, volume, 0, size, [&](const char* data, int length) {
    digest.update(data, static_cast<std::size_t>(length));
  });
  return digest.hex();
}

void create_raw_volume(virStoragePoolPtr pool, const std::string& name, std::uint64_t size) {
  std::string xml = raw_volume_xml(name, size);
  if (!StorageVolumeHandle(virStorageVolCreateXML(pool, xml.c_str(), 0))) {
    throw std::runtime_error(
        fmt::format("cannot create volume {}: {}", name, libvirt_error_message()));
  }
}

// The upload goes into the final volume, under a claim (NAME.uploading-TOKEN, on the cleanup
// stack and found by `down`), is read back and checked, and only then gets its NAME.verified
// marker. libvirt cannot rename a volume, and a copy made by the daemon is converted, not
// byte for byte, so the marker is what makes the volume a cached image.
void upload_verified(const LibvirtConnectionPtr& connection, virStoragePoolPtr pool,
                     const fs::path& file, const std::string& digest, const std::string& name,
                     const std::string& host, const ImageCacheOptions& options,
                     CachedVolume& result) {
  std::uint64_t size = fs::file_size(file);
  std::string claim = upload_claim_name(name, options.run_token);
  delete_volume_named(pool, claim);  // this run's earlier attempt
  create_raw_volume(pool, claim, 0);
  if (options.cleanup != nullptr) {
    options.cleanup->push(
        fmt::format("delete unfinished upload {}/{} on {}", options.pool, name, host),
        [connection, pool_name = options.pool, claim] {
          remove_unfinished_upload(connection->get(), pool_name, claim);
        });
  }
  create_raw_volume(pool, name, size);
  StorageVolumeHandle volume = lookup_storage_volume(pool, name);
  auto start = UploadClock::now();
  upload_into(connection->get(), volume.get(), file, size, host, options);
  result.upload_seconds = elapsed_since(start);
  start = UploadClock::now();
  std::string uploaded = volume_sha256(connection->get(), volume.get(), size);
  result.verify_seconds = elapsed_since(start);
  if (uploaded != digest) {
    throw std::runtime_error(
        fmt::format("the uploaded copy reads back with SHA-256 {}, not {}", uploaded, digest));
  }
  create_raw_volume(pool, verified_marker_name(name), 0);
  delete_volume_named(pool, claim);
  result.uploaded = true;
}

}  // namespace

std::string upload_claim_name(const std::string& final_name, const std::string& run_token) {
  return final_name + ".uploading-" + run_token;
}

std::string upload_claim_token(const std::string& volume) {
  static const std::regex kClaim(R"(^.+\.uploading-([0-9a-f]{6})$)");
  std::smatch match;
  return std::regex_match(volume, match, kClaim) ? match[1].str() : std::string();
}

std::string verified_marker_name(const std::string& final_name) {
  return final_name + ".verified";
}

void remove_unfinished_upload(virConnectPtr connection, const std::string& pool_name,
                              const std::string& claim) {
  StoragePoolHandle pool = lookup_storage_pool(connection, pool_name);
  if (!pool) {
    return;
  }
  std::string name = claim.substr(0, claim.rfind(".uploading-"));
  if (!lookup_storage_volume(pool.get(), verified_marker_name(name))) {
    delete_volume_named(pool.get(), name);
  }
  delete_volume_named(pool.get(), claim);
}

void ensure_image_cache_pool(virConnectPtr connection, const ImageCacheOptions& options) {
  StoragePoolHandle pool = lookup_storage_pool(connection, options.pool);
  if (!pool) {
    std::string xml = storage_pool_xml(options.pool, options.dir);
    pool.reset(virStoragePoolDefineXML(connection, xml.c_str(), 0));
    if (pool) {
      virStoragePoolSetAutostart(pool.get(), 1);
    } else {
      pool = lookup_storage_pool(connection, options.pool);  // defined by a run beside us
    }
    if (!pool || virStoragePoolBuild(pool.get(), 0) != 0) {
      throw std::runtime_error(fmt::format("cannot define the image cache pool {} at {}: {}",
                                           options.pool, options.dir.string(),
                                           libvirt_error_message()));
    }
  }
  if (virStoragePoolIsActive(pool.get()) != 1 && virStoragePoolCreate(pool.get(), 0) != 0 &&
      virStoragePoolIsActive(pool.get()) != 1) {
    throw std::runtime_error(fmt::format("cannot start the image cache pool {}: {}", options.pool,
                                         libvirt_error_message()));
  }
  virStoragePoolRefresh(pool.get(), 0);  // volumes other runs uploaded
}

CachedVolume cache_file_remotely(const LibvirtConnectionPtr& connection, const fs::path& file,
                                 const ImageCacheOptions& options) {
  std::string host = remote_host_name(*connection);
  CachedVolume result;
  std::string digest = cached_file_sha256(file);
  result.name = digest + "-" + file.filename().string();
  std::uint64_t size = fs::file_size(file);
  try {
    StoragePoolHandle pool = cache_pool(*connection, options);
    if (StorageVolumeHandle existing = lookup_storage_volume(pool.get(), result.name)) {
      std::string mismatch =
          lookup_storage_volume(pool.get(), verified_marker_name(result.name))
              ? cached_volume_mismatch(connection->get(), existing.get(), file, size)
              : "never verified: an upload that did not finish";
      if (mismatch.empty()) {
        if (options.progress) {
          options.progress(fmt::format("image: {} cached on {} ({}/{})", file.filename().string(),
                                       host, options.pool, result.name));
        }
      } else {
        if (options.progress) {
          options.progress(fmt::format("image: {}/{} on {} is not {} ({}): replacing it",
                                       options.pool, result.name, host, file.string(), mismatch));
        }
        delete_volume_named(pool.get(), verified_marker_name(result.name));
        delete_volume_named(pool.get(), result.name);
      }
    }
    if (!lookup_storage_volume(pool.get(), result.name)) {
      upload_verified(connection, pool.get(), file, digest, result.name, host, options, result);
      if (options.progress) {
        options.progress(fmt::format(
            "image: {} ({:.0f} MiB) uploaded to {} in {:.1f} s, SHA-256 read back and checked in "
            "{:.1f} s",
            file.filename().string(), mebibytes(size), host, result.upload_seconds,
            result.verify_seconds));
      }
    }
    StorageVolumeHandle volume = lookup_storage_volume(pool.get(), result.name);
    LibvirtText path(volume ? virStorageVolGetPath(volume.get()) : nullptr);
    if (!path) {
      throw std::runtime_error(libvirt_error_message());
    }
    result.remote_path = path.get();
  } catch (const std::exception& error) {
    throw std::runtime_error(fmt::format("image {}: cannot put it on {} ({}): {}", file.string(),
                                         host, connection->uri(), error.what()));
  }
  return result;
}

void cache_guest_images_remotely(std::vector<BootingGuest>& guests,
                                 const LibvirtConnectionPtr& connection,
                                 const ImageCacheOptions& options) {
  ensure_image_cache_pool(connection->get(), options);
  std::map<fs::path, fs::path> remote;  // local file -> its volume there
  auto place = [&](fs::path& file) {
    if (file.empty()) {
      return;
    }
    if (remote.count(file) == 0) {
      remote[file] = cache_file_remotely(connection, file, options).remote_path;
    }
    file = remote[file];
  };
  for (auto& guest : guests) {
    if (guest.image.disk_size == 0 && guest.image.disk_format == "qcow2") {
      guest.image.disk_size = qcow2_virtual_size(guest.image.disk);
    }
    place(guest.image.disk);
    if (guest.config.kernel_boot) {
      place(guest.image.kernel);
      place(guest.image.initrd);
    }
  }
}

}  // namespace ernic
