#include "runtime/streaming_copy.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

namespace ernic::emu {
namespace {

// Every alignment of both sides and lengths around the 16-byte head and the 64-byte lines:
// the bytes land exactly where memcpy puts them, and nothing beside them is touched.
TEST_CASE("a streaming copy equals memcpy at every alignment and length") {
  std::vector<std::byte> source(4096);
  for (std::size_t i = 0; i < source.size(); ++i) {
    source[i] = static_cast<std::byte>((i * 131 + 7) & 0xff);
  }
  for (std::size_t from = 0; from < 17; ++from) {
    for (std::size_t to = 0; to < 17; ++to) {
      for (std::size_t length : {0, 1, 15, 16, 17, 63, 64, 65, 127, 1000, 3000}) {
        std::vector<std::byte> expected(3100, std::byte{0xee});
        std::vector<std::byte> actual(3100, std::byte{0xee});
        std::memcpy(expected.data() + to, source.data() + from, length);
        streaming_copy(actual.data() + to, source.data() + from, length);
        INFO("from " << from << " to " << to << " length " << length);
        REQUIRE(actual == expected);
      }
    }
  }
}

}  // namespace
}  // namespace ernic::emu
