#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace ernic {

// What a guest image is made of (images/*.yaml). The builder turns it into a qcow2 base image
// with a manifest; the recipe's hash names the cache entry, so an unchanged recipe is never
// rebuilt.
struct ImageRecipe {
  std::filesystem::path file;
  std::string text;  // the file as read: what the hash covers
  std::string name;
  std::string suite = "bookworm";
  std::string variant = "minbase";
  std::string mirror = "http://deb.debian.org/debian";
  std::vector<std::string> packages;
  // "host": the newest Debian kernel installed under /boot of the build host; otherwise a
  // version such as "6.1.0-57-amd64" that must be installed there.
  std::string kernel = "host";
  std::string kernel_cmdline = "console=ttyS0 root=/dev/vda rw";
  // Module directories (relative to /lib/modules/VERSION) left out of the image, and module
  // names that must remain after trimming.
  std::vector<std::string> modules_drop;
  std::vector<std::string> modules_require;
  std::string user = "ernic";
  bool user_sudo = true;
  bool root_login = true;  // the image key also logs in as root (modprobe, rdma link add)
  std::uint64_t disk_size = 2ULL << 30;
  std::string memlock = "unlimited";
  std::string hostname = "ernic-guest";
};

// Reads and checks a recipe; throws std::runtime_error naming the file and the problem.
ImageRecipe load_image_recipe(const std::filesystem::path& file);
ImageRecipe parse_image_recipe(const std::string& text, const std::filesystem::path& file);

// Hex SHA-256 of bytes.
std::string sha256_hex(const std::string& bytes);

}  // namespace ernic
