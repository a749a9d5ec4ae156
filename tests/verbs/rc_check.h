// rc_verbs_check's support: reporting, the out-of-band TCP channel between the two ends,
// buffer patterns, completions and what they must hold, the device's resources, and posting.
#pragma once

#include <endian.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum {
  kPort = 1,                    // the device's one port
  kMaxSize = 8 << 20,           // the largest transfer
  kGuard = 4096,                // bytes after each transfer that must stay untouched
  kRegion = kMaxSize + kGuard,  // one transfer's place in the buffer
  kBufferSize = 3 * kRegion,    // SEND, WRITE and READ each have a region
  kMainDepth = 64,              // the main QP's send and receive queue depth
  kAuxDepth = 8,                // the depth of the QPs made for error checks
  kInfoSize = 128,              // the text exchanged to connect a QP pair
  kLabelSize = 32,              // a sync point's label
  kCompletionSeconds = 10,      // how long any completion may take
  kPeerSeconds = 60,            // how long the peer may take to reach a sync point
  kConnectSeconds = 20,         // how long the client retries a refused connection
};

static const uint8_t kGuardByte = 0xA5;
enum verb { kVerbSend = 1, kVerbWrite = 2, kVerbRead = 3 };
static const size_t kSizes[] = {1, 4097, 65536, kMaxSize};

// What one end tells the other to connect a QP pair and reach its memory.
struct remote {
  uint32_t qpn;
  uint32_t psn;
  union ibv_gid gid;
  uint64_t addr;
  uint32_t rkey;
};

struct device {
  struct ibv_context* context;
  struct ibv_device_attr attr;
  struct ibv_pd* pd;
  struct ibv_mr* mr;
  uint8_t* buffer;
  union ibv_gid gid;
  int gid_index;
  enum ibv_mtu mtu;
};

struct endpoint {
  struct ibv_cq* cq;
  struct ibv_qp* qp;
  struct ibv_qp_ex* qpx;  // the ibv_wr_* interface of qp
  uint32_t depth;         // the send queue depth the QP was created with
  struct remote peer;
};

// Which end this is, the out-of-band socket, the checks passed and the one running: the
// reporting and the sync points use them.
extern const char* g_role;
extern int g_sock;
extern int g_passed;
extern char g_check[160];

// Each is described where it is defined, in rc_check_support.c.
void begin(const char* format, ...) __attribute__((format(printf, 1, 2)));
void pass(void);
void fail(const char* format, ...) __attribute__((format(printf, 1, 2), noreturn));
void sync_point(const char* label);
void listen_and_accept(int port);
void connect_to(const char* host, const char* port);
void fill(uint8_t* p, size_t size, enum verb verb);
void prepare_target(uint8_t* p, size_t size, enum verb verb);
void verify(const uint8_t* p, size_t size, enum verb verb);
struct ibv_wc next_completion(struct ibv_cq* cq, const char* what);
void expect_no_completion(struct ibv_cq* cq, double seconds);
void expect_success(const struct ibv_wc* wc, const struct ibv_qp* qp, uint64_t wr_id,
                    enum ibv_wc_opcode opcode, long byte_len);
void expect_error(const struct ibv_wc* wc, uint64_t wr_id, enum ibv_wc_status status);
void expect_state(struct ibv_qp* qp, enum ibv_qp_state expected);
void open_device(struct device* d, const char* name, int gid_index);
void create_endpoint(struct device* d, struct endpoint* e, uint32_t depth);
void connect_endpoint(struct device* d, struct endpoint* e, uint64_t addr, uint32_t rkey);
void destroy_endpoint(struct endpoint* e);
void close_device(struct device* d);
struct ibv_sge sge_of(const struct device* d, size_t offset, size_t length);
void post_recv(struct endpoint* e, uint64_t wr_id, struct ibv_sge* sge, int num_sge);
int try_post_send(struct endpoint* e, uint64_t wr_id, enum ibv_wr_opcode opcode,
                  struct ibv_sge* sge, int num_sge, uint64_t remote_addr, uint32_t rkey,
                  struct ibv_send_wr** bad);
void post_send(struct endpoint* e, uint64_t wr_id, enum ibv_wr_opcode opcode, struct ibv_sge* sge,
               uint64_t remote_addr, uint32_t rkey);
uint32_t immediate_for(size_t size);
