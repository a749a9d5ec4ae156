#include "image/guest_image.h"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

namespace ernic {
namespace {

std::string read_existing_text(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) {
    throw std::runtime_error(fmt::format("{}: cannot read", file.string()));
  }
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::filesystem::path resolve(const std::filesystem::path& base, const std::string& value) {
  if (value.empty()) {
    return {};
  }
  std::filesystem::path path(value);
  return path.is_absolute() ? path : base / path;
}

// The first of `keys` that `object` has as a string.
std::string first_string(const nlohmann::json& object, std::initializer_list<const char*> keys) {
  for (const char* key : keys) {
    auto found = object.find(key);
    if (found != object.end() && found->is_string()) {
      return found->get<std::string>();
    }
  }
  return {};
}

GuestImage from_ernicctl_manifest(const nlohmann::json& json, const std::filesystem::path& file) {
  auto base = file.parent_path();
  GuestImage image;
  image.manifest = file;
  image.name = json.at("name").get<std::string>();
  image.disk = resolve(base, json.at("disk").get<std::string>());
  image.disk_format = json.value("disk_format", "qcow2");
  image.disk_size = json.value("disk_size", std::uint64_t{0});
  const auto& kernel = json.at("kernel");
  image.kernel_version = kernel.value("version", "");
  image.kernel = resolve(base, kernel.value("image", ""));
  image.initrd = resolve(base, kernel.value("initrd", ""));
  image.kernel_cmdline = kernel.value("cmdline", "");
  const auto& user = json.at("user");
  image.user = user.at("name").get<std::string>();
  image.private_key = resolve(base, user.at("private_key").get<std::string>());
  image.public_key = resolve(base, user.value("public_key", ""));
  image.root_login = user.value("root_login", false);
  for (const auto& key : json.at("host_keys")) {
    image.host_keys.push_back(
        {key.at("type").get<std::string>(), key.at("key").get<std::string>()});
  }
  image.static_address_arg =
      json.value("network", nlohmann::json::object()).value("static_arg", "");
  image.recipe_sha256 = json.value("recipe_sha256", "");
  image.cache_key = json.value("cache_key", "");
  return image;
}

// rocm-ernic's vm-info.json: its field names vary between releases, so the common spellings
// are accepted. Host keys come from a list of lines or from .pub files named beside it.
GuestImage from_vm_info(const nlohmann::json& json, const std::filesystem::path& file) {
  auto base = file.parent_path();
  GuestImage image;
  image.manifest = file;
  image.name = first_string(json, {"vm_name", "name", "image_name"});
  image.disk = resolve(base, first_string(json, {"qcow2", "image", "disk", "image_path"}));
  image.kernel = resolve(base, first_string(json, {"kernel", "kernel_path", "vmlinuz"}));
  image.initrd = resolve(base, first_string(json, {"initrd", "initrd_path"}));
  image.kernel_cmdline = first_string(json, {"cmdline", "kernel_cmdline", "append"});
  image.user = first_string(json, {"ssh_user", "user", "username"});
  image.private_key =
      resolve(base, first_string(json, {"ssh_key", "ssh_private_key", "private_key"}));
  for (const char* key : {"host_keys", "ssh_host_keys"}) {
    if (json.contains(key) && json[key].is_array()) {
      for (const auto& line : json[key]) {
        if (line.is_string()) {
          auto keys = parse_public_keys(line.get<std::string>());
          image.host_keys.insert(image.host_keys.end(), keys.begin(), keys.end());
        }
      }
    }
  }
  if (image.host_keys.empty()) {
    for (const char* pub : {"ssh_host_ed25519_key.pub", "ssh_host_ecdsa_key.pub"}) {
      if (std::filesystem::exists(base / pub)) {
        auto keys = parse_public_keys(read_existing_text(base / pub));
        image.host_keys.insert(image.host_keys.end(), keys.begin(), keys.end());
      }
    }
  }
  if (image.name.empty()) {
    image.name = file.parent_path().filename().string();
  }
  return image;
}

}  // namespace

std::uint64_t qcow2_virtual_size(const std::filesystem::path& disk) {
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

std::vector<HostKey> parse_public_keys(const std::string& text) {
  std::vector<HostKey> keys;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    HostKey key;
    if (!(words >> key.type >> key.base64) || key.type.rfind('#', 0) == 0) {
      continue;
    }
    if (key.type.rfind("ssh-", 0) == 0 || key.type.rfind("ecdsa-", 0) == 0) {
      keys.push_back(key);
    }
  }
  return keys;
}

GuestImage load_image_manifest(const std::filesystem::path& manifest) {
  auto file = std::filesystem::absolute(manifest);
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(read_existing_text(file));
  } catch (const nlohmann::json::exception& error) {
    throw std::runtime_error(fmt::format("{}: not JSON: {}", file.string(), error.what()));
  }
  GuestImage image;
  try {
    if (json.value("format", "") == "ernicctl-image/1") {
      image = from_ernicctl_manifest(json, file);
    } else {
      image = from_vm_info(json, file);
    }
  } catch (const nlohmann::json::exception& error) {
    throw std::runtime_error(
        fmt::format("{}: malformed image manifest: {}", file.string(), error.what()));
  }
  auto require = [&](const std::filesystem::path& path, const char* what) {
    if (path.empty()) {
      throw std::runtime_error(fmt::format("{}: names no {}", file.string(), what));
    }
    if (!std::filesystem::exists(path)) {
      throw std::runtime_error(
          fmt::format("{}: {} {} does not exist", file.string(), what, path.string()));
    }
  };
  require(image.disk, "disk image");
  require(image.private_key, "SSH private key");
  if (!image.kernel.empty()) {
    require(image.kernel, "kernel");
  }
  if (!image.initrd.empty()) {
    require(image.initrd, "initrd");
  }
  if (image.user.empty()) {
    throw std::runtime_error(fmt::format("{}: names no SSH user", file.string()));
  }
  return image;
}

}  // namespace ernic
