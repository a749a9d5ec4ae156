#include "mesh/auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <stdexcept>
#include <string>

namespace ernic::emu {

Nonce random_nonce() {
  Nonce nonce{};
  if (RAND_bytes(reinterpret_cast<unsigned char*>(nonce.data()), nonce.size()) != 1) {
    throw std::runtime_error("cannot draw random bytes for the mesh handshake");
  }
  return nonce;
}

Proof make_proof(std::string_view token, std::string_view role, const Nonce& theirs,
                 const Nonce& ours) {
  std::string message(role);
  message.push_back('\0');
  message.append(reinterpret_cast<const char*>(theirs.data()), theirs.size());
  message.append(reinterpret_cast<const char*>(ours.data()), ours.size());
  Proof proof{};
  unsigned int length = 0;
  if (HMAC(EVP_sha256(), token.data(), static_cast<int>(token.size()),
           reinterpret_cast<const unsigned char*>(message.data()), message.size(),
           reinterpret_cast<unsigned char*>(proof.data()), &length) == nullptr ||
      length != proof.size()) {
    throw std::runtime_error("HMAC-SHA256 failed");
  }
  return proof;
}

bool proofs_equal(std::span<const std::byte> a, std::span<const std::byte> b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace ernic::emu
