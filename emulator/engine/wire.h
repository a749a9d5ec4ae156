#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace ernic::emu {

// Every frame on a fabric starts with this fixed 48-byte little-endian header. Data frames carry
// RDMA traffic between queue pairs; control frames (op >= kFirstControlOp) carry the mesh
// protocol (handshake, registration, topology, heartbeats).
enum class FrameOp : std::uint8_t {
  kSend = 1,   // a segment of a SEND message, placed by (receive WQE, offset)
  kWrite = 2,  // a segment of an RDMA WRITE, placed by (rkey, remote_addr)
  kReadRequest = 3,
  kReadResponse = 4,  // a segment of READ data, placed into the requester's WQE buffer
  kAck = 5,           // cumulative: every message up to msn has been placed
  kNak = 6,           // status says why (NakCode)
  kFirstControlOp = 0x40,
  kHello = 0x40,
  kChallenge = 0x41,
  kAuthenticate = 0x42,
  kReject = 0x43,
  kWelcome = 0x44,
  kRegister = 0x45,
  kTopology = 0x46,
  kHeartbeat = 0x47,
  // Local connections only (mesh_shared_memory.cc): a memfd of the sender's client memory
  // comes with this frame (SCM_RIGHTS); body: region id u64, size u64.
  kShareMemory = 0x48,
  kForgetMemory = 0x49,  // body: region id u64; no frame refers to it after this one
  // Body: payload bytes by reference this node has placed since its last kCopied, u64. To a
  // peer whose handshake says it waits for them (mesh_shared_memory.cc, "copy window").
  kCopied = 0x4a,
  // Local connections only (mesh_rings.cc): the last frame of the sender's stream on the
  // socket; the rest is in the ring that comes with it (SCM_RIGHTS: its memfd, the eventfd the
  // reader waits on, the one the writer waits on). Body: the ring's capacity, u64.
  kRing = 0x4b,
};

enum FrameFlags : std::uint8_t {
  kFlagLast = 1,       // last segment of its message
  kFlagImmediate = 2,  // message carries immediate data (SEND/WRITE with immediate)
  // The payload is not on the wire: 16 bytes (region id u64, offset u64) say where it lies in
  // memory the sender shared with kShareMemory. payload_length is still the payload's.
  kFlagByReference = 0x80,
};
inline constexpr std::size_t kPayloadReferenceSize = 16;

enum class NakCode : std::uint16_t {
  kNone = 0,
  kReceiverNotReady = 1,
  kRemoteAccess = 2,
  kInvalidRequest = 3,  // e.g. SEND longer than the receive buffer
  kRemoteOperation = 4,
};

struct FrameHeader {
  FrameOp op = FrameOp::kAck;
  std::uint8_t flags = 0;
  std::uint32_t payload_length = 0;
  std::uint32_t dst_qpn = 0;
  std::uint32_t src_qpn = 0;
  std::uint32_t msn = 0;  // message sequence number within the QP pair
  std::uint32_t rkey = 0;
  std::uint64_t remote_addr = 0;   // WRITE: address of this segment; READ request: start
  std::uint32_t offset = 0;        // byte offset of this segment within its message
  std::uint32_t total_length = 0;  // length of the whole message
  std::uint32_t imm = 0;
  std::uint16_t status = 0;  // NakCode for kNak
};

inline constexpr std::size_t kFrameHeaderSize = 48;
inline constexpr std::uint16_t kFrameMagic = 0xE12C;
// Largest payload of one frame: data segments are at most this large, control frames far less.
inline constexpr std::uint32_t kMaxFramePayload = 4u << 20;
inline constexpr std::uint32_t kMaxControlPayload = 64u << 10;

using EncodedHeader = std::array<std::byte, kFrameHeaderSize>;

EncodedHeader encode_header(const FrameHeader& header);
// Decodes and validates a header. Returns an empty string, or the reason the frame is malformed
// (bad magic, unknown op, payload too large, inconsistent segment bounds). A malformed frame
// must close the connection it came from.
std::string decode_header(std::span<const std::byte, kFrameHeaderSize> bytes, FrameHeader& header);

inline bool is_control(FrameOp op) {
  return static_cast<std::uint8_t>(op) >= static_cast<std::uint8_t>(FrameOp::kFirstControlOp);
}

// Little-endian helpers for frame bodies.
class ByteWriter {
 public:
  void u8(std::uint8_t v) { bytes_.push_back(static_cast<std::byte>(v)); }
  void u16(std::uint16_t v);
  void u32(std::uint32_t v);
  void u64(std::uint64_t v);
  void str(const std::string& s);  // u16 length + bytes
  void raw(std::span<const std::byte> data);
  const std::basic_string<std::byte>& bytes() const { return bytes_; }

 private:
  std::basic_string<std::byte> bytes_;
};

// Reads a frame body; any read past the end sets failed() and returns zeros.
class ByteReader {
 public:
  explicit ByteReader(std::span<const std::byte> data) : data_(data) {}
  std::uint8_t u8();
  std::uint16_t u16();
  std::uint32_t u32();
  std::uint64_t u64();
  std::string str();
  // Fills `out` (a nonce, a proof) from the next out.size() bytes; zeros past the end.
  void bytes(std::span<std::byte> out);
  bool failed() const { return failed_; }
  bool at_end() const { return pos_ == data_.size(); }

 private:
  bool take(std::size_t n);
  std::span<const std::byte> data_;
  std::size_t pos_ = 0;
  bool failed_ = false;
};

}  // namespace ernic::emu
