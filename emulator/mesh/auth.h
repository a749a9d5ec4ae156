#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace ernic::emu {

// Challenge-response over the shared mesh token: each side proves it knows the token by
// returning HMAC-SHA256(token, role || its peer's nonce || its own nonce). The token itself
// never crosses the wire, and a recorded proof is useless for another connection's nonces.
using Nonce = std::array<std::byte, 16>;
using Proof = std::array<std::byte, 32>;

Nonce random_nonce();
Proof make_proof(std::string_view token, std::string_view role, const Nonce& theirs,
                 const Nonce& ours);
bool proofs_equal(std::span<const std::byte> a, std::span<const std::byte> b);  // constant time

}  // namespace ernic::emu
