#pragma once

#include <openssl/evp.h>

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>

namespace ernic {

// SHA-256 of bytes that arrive in pieces (a file read in chunks, a volume read over a stream).
class Sha256Stream {
 public:
  Sha256Stream();
  void update(const char* data, std::size_t length);
  // The digest as 64 hex digits; the stream is finished after it.
  std::string hex();

 private:
  struct Free {
    void operator()(EVP_MD_CTX* context) const { EVP_MD_CTX_free(context); }
  };
  std::unique_ptr<EVP_MD_CTX, Free> context_;
};

// Hex SHA-256 of a file's bytes, read in chunks (images are hundreds of MiB). Throws
// std::runtime_error naming the file when it cannot be read.
std::string file_sha256(const std::filesystem::path& file);

// The same digest, computed once and remembered beside the file in FILE.sha256 together with
// the size and modification time it was computed for: a rebuilt or edited image is hashed
// again, an unchanged one is not. A folder that cannot be written only costs the caching.
std::string cached_file_sha256(const std::filesystem::path& file);

}  // namespace ernic
