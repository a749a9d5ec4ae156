#include "engine/wire.h"

#include <algorithm>

#include <fmt/format.h>

namespace ernic::emu {
namespace {

void put16(std::byte* p, std::uint16_t v) {
  p[0] = static_cast<std::byte>(v);
  p[1] = static_cast<std::byte>(v >> 8);
}
void put32(std::byte* p, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) {
    p[i] = static_cast<std::byte>(v >> (8 * i));
  }
}
void put64(std::byte* p, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) {
    p[i] = static_cast<std::byte>(v >> (8 * i));
  }
}
std::uint16_t get16(const std::byte* p) {
  return static_cast<std::uint16_t>(std::to_integer<unsigned>(p[0]) |
                                    (std::to_integer<unsigned>(p[1]) << 8));
}
std::uint32_t get32(const std::byte* p) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) {
    v |= std::to_integer<std::uint32_t>(p[i]) << (8 * i);
  }
  return v;
}
std::uint64_t get64(const std::byte* p) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) {
    v |= std::to_integer<std::uint64_t>(p[i]) << (8 * i);
  }
  return v;
}

bool known_op(std::uint8_t op) {
  return (op >= 1 && op <= 6) || (op >= 0x40 && op <= static_cast<std::uint8_t>(FrameOp::kRing));
}

}  // namespace

// Layout: magic u16, op u8, flags u8, payload_length u32, dst_qpn u32, src_qpn u32, msn u32,
// rkey u32, remote_addr u64, offset u32, total_length u32, imm u32, status u16, reserved u16.
EncodedHeader encode_header(const FrameHeader& h) {
  EncodedHeader out{};
  std::byte* p = out.data();
  put16(p + 0, kFrameMagic);
  p[2] = static_cast<std::byte>(h.op);
  p[3] = static_cast<std::byte>(h.flags);
  put32(p + 4, h.payload_length);
  put32(p + 8, h.dst_qpn);
  put32(p + 12, h.src_qpn);
  put32(p + 16, h.msn);
  put32(p + 20, h.rkey);
  put64(p + 24, h.remote_addr);
  put32(p + 32, h.offset);
  put32(p + 36, h.total_length);
  put32(p + 40, h.imm);
  put16(p + 44, h.status);
  put16(p + 46, 0);
  return out;
}

std::string decode_header(std::span<const std::byte, kFrameHeaderSize> bytes, FrameHeader& h) {
  const std::byte* p = bytes.data();
  if (get16(p) != kFrameMagic) {
    return fmt::format("bad frame magic 0x{:04x}", get16(p));
  }
  const auto op = std::to_integer<std::uint8_t>(p[2]);
  if (!known_op(op)) {
    return fmt::format("unknown frame op 0x{:02x}", op);
  }
  h.op = static_cast<FrameOp>(op);
  h.flags = std::to_integer<std::uint8_t>(p[3]);
  h.payload_length = get32(p + 4);
  h.dst_qpn = get32(p + 8);
  h.src_qpn = get32(p + 12);
  h.msn = get32(p + 16);
  h.rkey = get32(p + 20);
  h.remote_addr = get64(p + 24);
  h.offset = get32(p + 32);
  h.total_length = get32(p + 36);
  h.imm = get32(p + 40);
  h.status = get16(p + 44);
  if (get16(p + 46) != 0) {
    return "reserved header field is not zero";
  }
  if ((h.flags & ~(kFlagLast | kFlagImmediate | kFlagByReference)) != 0) {
    return fmt::format("unknown frame flags 0x{:02x}", h.flags);
  }
  if ((h.flags & kFlagByReference) != 0 && h.op != FrameOp::kSend && h.op != FrameOp::kWrite &&
      h.op != FrameOp::kReadResponse) {
    return "a payload by reference on a frame that carries none";
  }
  if (is_control(h.op)) {
    if (h.payload_length > kMaxControlPayload) {
      return fmt::format("control frame payload of {} bytes exceeds {}", h.payload_length,
                         kMaxControlPayload);
    }
    return {};
  }
  if (h.payload_length > kMaxFramePayload) {
    return fmt::format("frame payload of {} bytes exceeds {}", h.payload_length, kMaxFramePayload);
  }
  const bool carries_data =
      h.op == FrameOp::kSend || h.op == FrameOp::kWrite || h.op == FrameOp::kReadResponse;
  if (!carries_data && h.payload_length != 0) {
    return "payload on a frame that carries none";
  }
  if (carries_data && static_cast<std::uint64_t>(h.offset) + h.payload_length > h.total_length) {
    return fmt::format("segment [{}, +{}) beyond message length {}", h.offset, h.payload_length,
                       h.total_length);
  }
  return {};
}

void ByteWriter::u16(std::uint16_t v) {
  u8(static_cast<std::uint8_t>(v));
  u8(static_cast<std::uint8_t>(v >> 8));
}
void ByteWriter::u32(std::uint32_t v) {
  u16(static_cast<std::uint16_t>(v));
  u16(static_cast<std::uint16_t>(v >> 16));
}
void ByteWriter::u64(std::uint64_t v) {
  u32(static_cast<std::uint32_t>(v));
  u32(static_cast<std::uint32_t>(v >> 32));
}
void ByteWriter::str(const std::string& s) {
  u16(static_cast<std::uint16_t>(s.size()));
  for (char c : s) {
    u8(static_cast<std::uint8_t>(c));
  }
}
void ByteWriter::raw(std::span<const std::byte> data) {
  bytes_.append(data.begin(), data.end());
}

bool ByteReader::take(std::size_t n) {
  if (failed_ || data_.size() - pos_ < n) {
    failed_ = true;
    return false;
  }
  return true;
}
void ByteReader::bytes(std::span<std::byte> out) {
  if (!take(out.size())) {
    std::fill(out.begin(), out.end(), std::byte{0});
    return;
  }
  std::copy_n(data_.begin() + static_cast<std::ptrdiff_t>(pos_), out.size(), out.begin());
  pos_ += out.size();
}
std::uint8_t ByteReader::u8() {
  if (!take(1)) {
    return 0;
  }
  return std::to_integer<std::uint8_t>(data_[pos_++]);
}
std::uint16_t ByteReader::u16() {
  if (!take(2)) {
    return 0;
  }
  auto v = get16(data_.data() + pos_);
  pos_ += 2;
  return v;
}
std::uint32_t ByteReader::u32() {
  if (!take(4)) {
    return 0;
  }
  auto v = get32(data_.data() + pos_);
  pos_ += 4;
  return v;
}
std::uint64_t ByteReader::u64() {
  if (!take(8)) {
    return 0;
  }
  auto v = get64(data_.data() + pos_);
  pos_ += 8;
  return v;
}
std::string ByteReader::str() {
  const std::uint16_t n = u16();
  if (!take(n)) {
    return {};
  }
  std::string s(reinterpret_cast<const char*>(data_.data() + pos_), n);
  pos_ += n;
  return s;
}

}  // namespace ernic::emu
