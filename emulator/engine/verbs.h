#pragma once

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace ernic::emu {

// The verbs vocabulary the engine speaks: a subset of ibverbs, RC transport only.
enum AccessFlags : std::uint32_t {
  kAccessLocalWrite = 1,
  kAccessRemoteWrite = 2,
  kAccessRemoteRead = 4,
};

enum class QpState : std::uint8_t { kReset, kInit, kRtr, kRts, kError };

enum class WcStatus : std::uint8_t {
  kSuccess = 0,
  kLocalLengthError,
  kLocalProtectionError,
  kFlushError,
  kRemoteAccessError,
  kRemoteInvalidRequest,
  kRemoteOperationError,
  kRetryExceeded,
  kRnrRetryExceeded,
};

enum class WcOpcode : std::uint8_t { kSend, kRdmaWrite, kRdmaRead, kRecv, kRecvRdmaWithImm };

enum class SendOpcode : std::uint8_t {
  kSend,
  kSendWithImm,
  kRdmaWrite,
  kRdmaWriteWithImm,
  kRdmaRead
};

struct Sge {
  std::uint64_t addr = 0;
  std::uint32_t length = 0;
  std::uint32_t lkey = 0;
};

struct SendWr {
  std::uint64_t wr_id = 0;
  SendOpcode opcode = SendOpcode::kSend;
  Sge sge;
  bool signaled = true;
  std::uint32_t imm = 0;
  std::uint64_t remote_addr = 0;
  std::uint32_t rkey = 0;
};

struct RecvWr {
  std::uint64_t wr_id = 0;
  Sge sge;
};

struct Completion {
  std::uint64_t wr_id = 0;
  WcStatus status = WcStatus::kSuccess;
  WcOpcode opcode = WcOpcode::kSend;
  std::uint32_t qpn = 0;
  std::uint32_t byte_len = 0;
  std::uint32_t imm = 0;
  bool has_imm = false;
};

struct QpAttributes {
  QpState state = QpState::kReset;
  std::uint32_t access = 0;  // remote access the QP permits (INIT)
  std::string remote_gid;    // RTR: resolved to a node through the fabric
  std::uint32_t remote_qpn = 0;
  // RNR: 7 retries mean "retry forever", as in InfiniBand.
  std::uint8_t rnr_retry = 7;
  std::chrono::microseconds rnr_delay{50};
};

struct MemoryKeys {
  std::uint32_t lkey = 0;
  std::uint32_t rkey = 0;
};

// Misuse of the verbs API (unknown handle, illegal state transition, bad work request).
// It carries the errno a verbs call returns for it: EINVAL for misuse, ENOMEM for an exhausted
// resource.
class VerbsError : public std::runtime_error {
 public:
  explicit VerbsError(const std::string& what, int error_number = EINVAL)
      : std::runtime_error(what), error_number_(error_number) {}
  explicit VerbsError(const char* what, int error_number = EINVAL)
      : std::runtime_error(what), error_number_(error_number) {}
  int error_number() const { return error_number_; }

 private:
  int error_number_;
};

const char* to_string(WcStatus status);
const char* to_string(QpState state);

}  // namespace ernic::emu
