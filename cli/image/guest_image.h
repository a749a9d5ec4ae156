#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace ernic {

// An SSH host key the image's sshd presents: "ssh-ed25519" and its base64 blob.
struct HostKey {
  std::string type;
  std::string base64;

  // "ssh-ed25519 AAAA..." as in a .pub file or after the host field of known_hosts.
  std::string line() const { return type + " " + base64; }
};

// A bootable guest image and what is needed to reach it: what a libvirt guest is made from.
// Built by `ernicctl image build` (manifest.json) or named by a scenario with its manifest
// (ours, or rocm-ernic's vm-info.json).
struct GuestImage {
  std::filesystem::path manifest;
  std::string name;
  std::filesystem::path disk;  // qcow2 base image
  std::string disk_format = "qcow2";
  std::uint64_t disk_size = 0;  // virtual size in bytes; 0 when the manifest does not say
  // Direct kernel boot; empty kernel means the disk boots by itself (firmware and bootloader).
  std::filesystem::path kernel;
  std::filesystem::path initrd;
  std::string kernel_cmdline;
  std::string kernel_version;
  std::string user;
  std::filesystem::path private_key;
  std::filesystem::path public_key;
  bool root_login = false;
  // When empty the guest's host key cannot be verified, and providers refuse to connect
  // unless the scenario says to trust on first use.
  std::vector<HostKey> host_keys;
  // Kernel command-line argument the image reads its static address from ("ernic.net"), or
  // empty when the image only does DHCP.
  std::string static_address_arg;
  std::string recipe_sha256;
  std::string cache_key;
};

// Reads an image manifest: ernicctl's manifest.json or rocm-ernic's vm-info.json. Relative
// paths inside are relative to the manifest's folder. Throws std::runtime_error naming the
// file and the missing or malformed field.
GuestImage load_image_manifest(const std::filesystem::path& manifest);

// A qcow2 disk's virtual size in bytes, from its header; throws naming a file that is not qcow2.
std::uint64_t qcow2_virtual_size(const std::filesystem::path& disk);

// Reads "TYPE BASE64 [comment]" lines (a .pub file or several).
std::vector<HostKey> parse_public_keys(const std::string& text);

}  // namespace ernic
