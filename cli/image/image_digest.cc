#include "image/image_digest.h"

#include <fmt/format.h>

#include <chrono>
#include <fstream>
#include <stdexcept>
#include <vector>

#include "base/durable_file.h"

namespace ernic {
namespace fs = std::filesystem;
namespace {

// What FILE.sha256 records beside the digest: valid for this size and modification time only.
std::string digest_stamp_of(const fs::path& file) {
  auto modified = fs::last_write_time(file).time_since_epoch();
  return fmt::format("{} {}", fs::file_size(file),
                     std::chrono::duration_cast<std::chrono::nanoseconds>(modified).count());
}

}  // namespace

Sha256Stream::Sha256Stream() : context_(EVP_MD_CTX_new()) {
  if (!context_ || EVP_DigestInit_ex(context_.get(), EVP_sha256(), nullptr) != 1) {
    throw std::runtime_error("SHA-256 failed");
  }
}

void Sha256Stream::update(const char* data, std::size_t length) {
  if (EVP_DigestUpdate(context_.get(), data, length) != 1) {
    throw std::runtime_error("SHA-256 failed");
  }
}

std::string Sha256Stream::hex() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(context_.get(), digest, &length) != 1) {
    throw std::runtime_error("SHA-256 failed");
  }
  std::string text;
  for (unsigned int i = 0; i < length; ++i) {
    text += fmt::format("{:02x}", digest[i]);
  }
  return text;
}

std::string file_sha256(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    throw std::runtime_error(fmt::format("{}: cannot read it to hash it", file.string()));
  }
  Sha256Stream digest;
  std::vector<char> chunk(1 << 20);
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    digest.update(chunk.data(), static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) {
    throw std::runtime_error(fmt::format("{}: read error while hashing it", file.string()));
  }
  return digest.hex();
}

std::string cached_file_sha256(const fs::path& file) {
  std::string stamp = digest_stamp_of(file);
  fs::path remembered = file.string() + ".sha256";
  {
    std::ifstream in(remembered);
    std::string digest;
    std::string size;
    std::string modified;
    if (in >> digest >> size >> modified && size + " " + modified == stamp && digest.size() == 64) {
      return digest;
    }
  }
  std::string digest = file_sha256(file);
  try {
    // Only a cache: a digest that cannot be remembered is computed again next time.
    write_file_durably(remembered, fmt::format("{} {}\n", digest, stamp),
                       {.durability = Durability::kDerived});
  } catch (const FileWriteError&) {
  }
  return digest;
}

}  // namespace ernic
