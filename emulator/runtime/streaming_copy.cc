#include "runtime/streaming_copy.h"

#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace ernic::emu {

void streaming_copy(std::byte* destination, const std::byte* source, std::size_t length) {
#if defined(__SSE2__)
  constexpr std::size_t kLine = 64;
  // Up to the destination's next 16-byte boundary with ordinary stores.
  std::size_t head = (16 - (reinterpret_cast<std::uintptr_t>(destination) & 15)) & 15;
  head = head < length ? head : length;
  std::memcpy(destination, source, head);
  destination += head;
  source += head;
  length -= head;
  for (; length >= kLine; length -= kLine, source += kLine, destination += kLine) {
    const auto* from = reinterpret_cast<const __m128i*>(source);
    auto* to = reinterpret_cast<__m128i*>(destination);
    const __m128i a = _mm_loadu_si128(from);
    const __m128i b = _mm_loadu_si128(from + 1);
    const __m128i c = _mm_loadu_si128(from + 2);
    const __m128i d = _mm_loadu_si128(from + 3);
    _mm_stream_si128(to, a);
    _mm_stream_si128(to + 1, b);
    _mm_stream_si128(to + 2, c);
    _mm_stream_si128(to + 3, d);
  }
  std::memcpy(destination, source, length);
  _mm_sfence();
#else
  std::memcpy(destination, source, length);
#endif
}

}  // namespace ernic::emu
