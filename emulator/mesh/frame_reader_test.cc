#include "mesh/frame_reader.h"

#include <catch2/catch.hpp>

#include <cerrno>
#include <cstring>
#include <tuple>
#include <vector>

namespace ernic::emu {
namespace {

// A byte source that hands out at most `chunk` bytes per readv, then "would block".
struct Source {
  std::vector<std::byte> data;
  std::size_t pos = 0;
  std::size_t chunk = SIZE_MAX;
  ssize_t read(const iovec* iov, int count) {
    if (pos == data.size()) {
      errno = EAGAIN;
      return -1;
    }
    std::size_t budget = std::min(chunk, data.size() - pos);
    std::size_t done = 0;
    for (int i = 0; i < count && budget > 0; ++i) {
      const std::size_t n = std::min(budget, iov[i].iov_len);
      std::memcpy(iov[i].iov_base, data.data() + pos, n);
      pos += n;
      done += n;
      budget -= n;
    }
    return static_cast<ssize_t>(done);
  }
  void add(const FrameHeader& h, const std::vector<std::byte>& payload = {}) {
    const auto bytes = encode_header(h);
    data.insert(data.end(), bytes.begin(), bytes.end());
    data.insert(data.end(), payload.begin(), payload.end());
  }
};

struct Recorder : FrameReader::Sink {
  std::vector<std::byte> target = std::vector<std::byte>(64, std::byte{0});
  std::vector<FrameHeader> delivered_frames;
  std::vector<std::vector<std::byte>> control_bodies;
  bool accept = true;
  bool authenticated = true;
  bool accepts_data() const override { return authenticated; }
  Placement place(const FrameHeader& h) override {
    return {accept && h.payload_length <= target.size() ? target.data() : nullptr};
  }
  void delivered(const FrameHeader& h) override {
    delivered_frames.push_back(h);
    const std::size_t n = std::min<std::size_t>(h.payload_length, target.size());
    delivered_payloads.emplace_back(target.begin(), target.begin() + static_cast<long>(n));
  }
  std::vector<std::vector<std::byte>> delivered_payloads;  // what the target held then
  bool control(const FrameHeader&, std::span<const std::byte> body) override {
    control_bodies.emplace_back(body.begin(), body.end());
    return true;
  }
  // Region 7 is `shared`, the only memory the peer shared.
  std::vector<std::byte> shared = std::vector<std::byte>(32, std::byte{0});
  const std::byte* referenced(std::uint64_t region, std::uint64_t offset,
                              std::uint32_t length) override {
    const bool inside = offset <= shared.size() && length <= shared.size() - offset;
    return region == 7 && inside ? shared.data() + offset : nullptr;
  }
};

std::vector<std::byte> bytes(std::initializer_list<int> values) {
  std::vector<std::byte> out;
  for (int v : values) {
    out.push_back(static_cast<std::byte>(v));
  }
  return out;
}

FrameHeader write_frame(std::uint32_t length) {
  FrameHeader h;
  h.op = FrameOp::kWrite;
  h.payload_length = length;
  h.total_length = length;
  h.flags = kFlagLast;
  return h;
}

TEST_CASE("frames are decoded whatever way the stream is cut") {
  for (std::size_t chunk :
       {std::size_t{1}, std::size_t{7}, std::size_t{48}, std::size_t{53}, SIZE_MAX}) {
    Source s;
    s.chunk = chunk;
    s.add(write_frame(5), bytes({1, 2, 3, 4, 5}));
    FrameHeader ack;
    ack.op = FrameOp::kAck;
    ack.msn = 9;
    s.add(ack);
    FrameHeader hello;
    hello.op = FrameOp::kHello;
    hello.payload_length = 3;
    s.add(hello, bytes({7, 8, 9}));
    Recorder r;
    FrameReader reader;
    std::string reason;
    FrameReader::Result result;
    do {
      result = reader.pump([&](const iovec* iov, int n) { return s.read(iov, n); }, r, reason);
    } while (result == FrameReader::Result::kBudgetUsed);
    CHECK(result == FrameReader::Result::kWouldBlock);
    REQUIRE(r.delivered_frames.size() == 2);
    CHECK(r.delivered_frames[1].msn == 9);
    CHECK(r.target[4] == std::byte{5});
    REQUIRE(r.control_bodies.size() == 1);
    CHECK(r.control_bodies[0] == bytes({7, 8, 9}));
  }
}

std::vector<std::byte> counting(std::size_t n) {
  std::vector<std::byte> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    out[i] = static_cast<std::byte>(i + 1);
  }
  return out;
}

// A system call costs as much as copying tens of KiB in this project's VMs: a small frame (a
// latency test's message) is one, with the acknowledgement that came behind it.
TEST_CASE("a small frame and the acknowledgement behind it take one read") {
  Source s;
  s.add(write_frame(40), counting(40));
  FrameHeader ack;
  ack.op = FrameOp::kAck;
  ack.msn = 3;
  s.add(ack);
  Recorder r;
  FrameReader reader;
  std::string reason;
  int reads_with_data = 0;
  const auto read = [&](const iovec* iov, int n) {
    const ssize_t got = s.read(iov, n);
    reads_with_data += got > 0 ? 1 : 0;
    return got;
  };
  CHECK(reader.pump(read, r, reason) == FrameReader::Result::kWouldBlock);
  CHECK(reads_with_data == 1);
  REQUIRE(r.delivered_frames.size() == 2);
  CHECK(r.delivered_payloads[0] == counting(40));
  CHECK(r.delivered_frames[1].msn == 3);
}

TEST_CASE("frames read ahead are delivered without the source, whatever the budget") {
  Source s;
  for (int i = 0; i < 10; ++i) {
    s.add(write_frame(40), counting(40));
  }
  Recorder r;
  FrameReader reader;
  std::string reason;
  CHECK(reader.pump([&](const iovec* iov, int n) { return s.read(iov, n); }, r, reason, 50) ==
        FrameReader::Result::kBudgetUsed);
  CHECK(s.pos == s.data.size());  // all of it was read with the first header
  CHECK(r.delivered_frames.size() < 10);
  // Nothing is left in the source, so nothing will say it is readable: the caller must know.
  CHECK(reader.has_work_without_input());
  int reads = 0;
  const auto empty = [&reads](const iovec*, int) -> ssize_t {
    ++reads;
    errno = EAGAIN;
    return -1;
  };
  CHECK(reader.pump(empty, r, reason, 50) == FrameReader::Result::kWouldBlock);
  CHECK(reads == 1);
  CHECK(r.delivered_frames.size() == 10);
  CHECK(r.delivered_payloads[9] == counting(40));
  CHECK_FALSE(reader.has_work_without_input());
}

TEST_CASE("a refused payload is read and dropped, the stream stays in step") {
  Source s;
  s.add(write_frame(200000),
        std::vector<std::byte>(200000, std::byte{0x55}));  // too big for target
  s.add(write_frame(2), bytes({0x11, 0x22}));
  Recorder r;
  FrameReader reader;
  std::string reason;
  while (reader.pump([&](const iovec* iov, int n) { return s.read(iov, n); }, r, reason) ==
         FrameReader::Result::kBudgetUsed) {
  }
  REQUIRE(r.delivered_frames.size() == 2);
  CHECK(r.target[0] == std::byte{0x11});
  CHECK(r.target[2] == std::byte{0});  // nothing of the dropped payload landed anywhere
}

TEST_CASE("malformed headers are reported with a reason") {
  struct Case {
    const char* name;
    std::function<void(std::array<std::byte, kFrameHeaderSize>&)> corrupt;
    const char* reason;
  };
  const Case cases[] = {
      {"bad magic", [](auto& b) { b[0] = std::byte{0}; }, "bad frame magic"},
      {"unknown op", [](auto& b) { b[2] = std::byte{0x33}; }, "unknown frame op"},
      {"oversized", [](auto& b) { b[7] = std::byte{0x7f}; }, "exceeds"},
      {"segment past message",
       [](auto& b) {
         b[36] = std::byte{1};
         b[37] = std::byte{0};
       },
       "beyond message length"},
  };
  for (const auto& c : cases) {
    SECTION(c.name) {
      auto header = encode_header(write_frame(16));
      c.corrupt(header);
      Source s;
      s.data.assign(header.begin(), header.end());
      Recorder r;
      FrameReader reader;
      std::string reason;
      CHECK(reader.pump([&](const iovec* iov, int n) { return s.read(iov, n); }, r, reason) ==
            FrameReader::Result::kMalformed);
      CHECK_THAT(reason, Catch::Contains(c.reason));
      CHECK(r.delivered_frames.empty());
    }
  }
}

TEST_CASE("end of stream is reported, mid-frame or not") {
  Source s;
  s.add(write_frame(4), bytes({1, 2}));  // two payload bytes missing
  Recorder r;
  FrameReader reader;
  std::string reason;
  auto eof_read = [&](const iovec* iov, int n) -> ssize_t {
    const ssize_t got = s.read(iov, n);
    return got < 0 ? 0 : got;
  };
  CHECK(reader.pump(eof_read, r, reason) == FrameReader::Result::kClosed);
  CHECK_THAT(reason, Catch::Contains("middle of a frame"));
}

TEST_CASE("a data frame before the handshake completed is refused before its payload") {
  Source s;
  s.add(write_frame(5), bytes({1, 2, 3, 4, 5}));
  Recorder r;
  r.authenticated = false;
  FrameReader reader;
  std::string reason;
  CHECK(reader.pump([&](const iovec* iov, int n) { return s.read(iov, n); }, r, reason) ==
        FrameReader::Result::kMalformed);
  CHECK(reason == "data frame before the handshake completed");
  CHECK(r.delivered_frames.empty());
  CHECK(r.target[0] == std::byte{0});
}

TEST_CASE("a payload whose destination is released goes to scratch space") {
  Source s;
  s.add(write_frame(6), bytes({1, 2}));  // the header and two payload bytes arrive first
  Recorder r;
  FrameReader reader;
  std::string reason;
  auto read = [&](const iovec* iov, int n) { return s.read(iov, n); };
  auto arrive = [&](int b) {
    s.data.push_back(static_cast<std::byte>(b));
    REQUIRE(reader.pump(read, r, reason) == FrameReader::Result::kWouldBlock);
  };
  REQUIRE(reader.pump(read, r, reason) == FrameReader::Result::kWouldBlock);
  CHECK(r.target[1] == std::byte{2});
  reader.release_memory(r.target.data() + 32, 8);  // other memory: the payload still lands
  arrive(3);
  CHECK(r.target[2] == std::byte{3});
  reader.release_memory(r.target.data(), r.target.size());
  for (int b : {4, 5, 6}) {
    arrive(b);
  }
  CHECK(r.target[3] == std::byte{0});  // the rest never reached the released memory
  // The frame still completes; the engine, whose QP is gone, drops it.
  CHECK(r.delivered_frames.size() == 1);
}

std::vector<std::byte> reference_to(std::uint64_t region, std::uint64_t offset) {
  ByteWriter w;
  w.u64(region);
  w.u64(offset);
  return {w.bytes().begin(), w.bytes().end()};
}

TEST_CASE("a payload by reference is copied from the shared memory it names") {
  for (std::size_t chunk : {std::size_t{1}, std::size_t{5}, std::size_t{50}, SIZE_MAX}) {
    Source s;
    s.chunk = chunk;
    FrameHeader h = write_frame(4);
    h.flags |= kFlagByReference;
    s.add(h, reference_to(7, 10));  // 16 bytes on the wire for the 4-byte payload
    s.add(write_frame(2), bytes({0x11, 0x22}));
    Recorder r;
    for (int i = 0; i < 4; ++i) {
      r.shared[10 + i] = static_cast<std::byte>(0xa0 + i);
    }
    FrameReader reader;
    std::string reason;
    while (r.delivered_frames.size() < 2) {
      REQUIRE(reader.pump([&](const iovec* iov, int n) { return s.read(iov, n); }, r, reason) !=
              FrameReader::Result::kMalformed);
    }
    CHECK(r.delivered_payloads[0] == bytes({0xa0, 0xa1, 0xa2, 0xa3}));
    CHECK(r.delivered_frames[0].payload_length == 4);
    CHECK((r.delivered_frames[0].flags & kFlagByReference) == 0);  // the engine never sees it
    CHECK(r.target[0] == std::byte{0x11});                         // the next frame in step
  }
}

// A referenced payload is copied within each turn's budget, as a payload read from the socket
// would be (a copied byte counting a quarter of a read one: turns of equal time), and the copy
// goes on in the next turns though the socket has nothing more.
TEST_CASE("a payload by reference is copied a budget at a time") {
  static_assert(kCopyBytesPerBudgetByte == 4);
  Source s;
  FrameHeader h = write_frame(80);
  h.flags |= kFlagByReference;
  s.add(h, reference_to(7, 0));
  Recorder r;
  r.shared.resize(80);
  r.target.resize(80);
  for (int i = 0; i < 80; ++i) {
    r.shared[i] = static_cast<std::byte>(i + 1);
  }
  FrameReader reader;
  std::string reason;
  auto read = [&](const iovec* iov, int n) { return s.read(iov, n); };
  // 48 header + 16 reference bytes read, then 8 budget bytes left: 32 payload bytes copied.
  CHECK(reader.pump(read, r, reason, 72) == FrameReader::Result::kBudgetUsed);
  CHECK(reader.copying());
  CHECK(r.delivered_frames.empty());
  CHECK(r.target[31] == std::byte{32});
  CHECK(r.target[32] == std::byte{0});
  CHECK(reader.pump(read, r, reason, 8) == FrameReader::Result::kBudgetUsed);
  CHECK(r.target[63] == std::byte{64});
  CHECK(r.target[64] == std::byte{0});
  CHECK(r.delivered_frames.empty());
  // The last 16 bytes take 4 of the 8: the turn goes on to the socket, which has nothing.
  CHECK(reader.pump(read, r, reason, 8) == FrameReader::Result::kWouldBlock);
  CHECK_FALSE(reader.copying());
  REQUIRE(r.delivered_payloads.size() == 1);
  CHECK(r.delivered_payloads[0][79] == std::byte{80});
}

// A sink that takes copies elsewhere gets the addresses once; the reader reads nothing more
// (the next frame stays in the source) until it is told the copy is done, then delivers.
TEST_CASE("a payload by reference copied elsewhere holds the stream until it is done") {
  struct TakesCopies : Recorder {
    std::vector<std::tuple<std::byte*, const std::byte*, std::uint32_t>> offered;
    bool copy_elsewhere(std::byte* destination, const std::byte* source, std::uint32_t length,
                        bool) override {
      offered.emplace_back(destination, source, length);
      return true;
    }
  };
  Source s;
  FrameHeader h = write_frame(20);
  h.flags |= kFlagByReference;
  s.add(h, reference_to(7, 4));
  s.add(write_frame(2), bytes({0x11, 0x22}));
  TakesCopies r;
  FrameReader reader;
  std::string reason;
  auto read = [&](const iovec* iov, int n) { return s.read(iov, n); };
  CHECK(reader.pump(read, r, reason) == FrameReader::Result::kCopyElsewhere);
  REQUIRE(r.offered.size() == 1);
  CHECK(std::get<0>(r.offered[0]) == r.target.data());
  CHECK(std::get<1>(r.offered[0]) == r.shared.data() + 4);
  CHECK(std::get<2>(r.offered[0]) == 20);
  CHECK(reader.copying_elsewhere());
  const std::size_t read_so_far = s.pos;
  CHECK(reader.pump(read, r, reason) == FrameReader::Result::kCopyElsewhere);
  CHECK(s.pos == read_so_far);
  CHECK(r.delivered_frames.empty());
  CHECK(r.target[0] == std::byte{0});  // the reader copied nothing itself
  r.target[0] = std::byte{0x5a};       // what the copier placed
  reader.copy_finished();
  CHECK(reader.pump(read, r, reason) == FrameReader::Result::kWouldBlock);
  REQUIRE(r.delivered_frames.size() == 2);
  CHECK(r.delivered_payloads[0][0] == std::byte{0x5a});
  CHECK(r.target[0] == std::byte{0x11});  // the next frame, read after the copy
  CHECK(r.offered.size() == 1);
}

TEST_CASE("a reference outside the memory the peer shared is malformed") {
  for (const auto& [region, offset] :
       {std::pair<std::uint64_t, std::uint64_t>{8, 0}, {7, 29}, {7, ~std::uint64_t{0}}}) {
    Source s;
    FrameHeader h = write_frame(4);
    h.flags |= kFlagByReference;
    s.add(h, reference_to(region, offset));
    Recorder r;
    FrameReader reader;
    std::string reason;
    CHECK(reader.pump([&](const iovec* iov, int n) { return s.read(iov, n); }, r, reason) ==
          FrameReader::Result::kMalformed);
    CHECK_THAT(reason, Catch::Contains("did not share"));
    CHECK(r.delivered_frames.empty());
  }
  FrameHeader ack;
  ack.op = FrameOp::kAck;
  ack.flags = kFlagByReference;
  FrameHeader decoded;
  CHECK_THAT(decode_header(encode_header(ack), decoded), Catch::Contains("carries none"));
}

}  // namespace
}  // namespace ernic::emu
