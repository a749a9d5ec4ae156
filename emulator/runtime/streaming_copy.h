#pragma once

#include <cstddef>

namespace ernic::emu {

// memcpy with non-temporal stores: the destination is written to memory without first being
// read into the cache, and does not evict what is there. For copies whose destination the
// copying process will not read again and which are too large to stay in the cache anyway
// (a large message placed by reference): a third less memory traffic than memcpy. The stores
// are fenced before it returns, so what the caller publishes afterwards (a completion) is
// seen after the data.
void streaming_copy(std::byte* destination, const std::byte* source, std::size_t length);

}  // namespace ernic::emu
