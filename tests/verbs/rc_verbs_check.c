// rc_verbs_check: an RC verbs program of the project's own, run against an ERNIC instance's
// device the way perftest or ibv_rc_pingpong are (docs/emulator.md, "Real verbs programs"). Two
// processes, one per endpoint, exchange {qpn, psn, gid, buffer address, rkey} over a loopback
// TCP socket as ibv_rc_pingpong does, then check, with libibverbs only:
//   - for each size of {1, 4097, 64 KiB, 8 MiB}: SEND/RECV, RDMA WRITE with immediate (through
//     the ibv_wr_* API) and RDMA READ, verifying the bytes that arrived (a pattern depending on
//     size and verb, with nothing written past the end) and each completion's status, opcode,
//     wr_id, qp_num and byte_len;
//   - the verbs contract, on the client: requests beyond the device's limits refused with the
//     right errno, posting on a QP not ready to send refused, a full send queue refused, an
//     incomplete INIT->RTR refused, and a bad lkey and a bad rkey completing with the right error
//     status and leaving the QP in ERR, where later requests complete flushed.
// Every wait is bounded: completions within a few seconds, the peer within a minute.
//
//   rc_verbs_check server PORT [-d DEV] [-g GIDX]
//   rc_verbs_check client HOST PORT [-d DEV] [-g GIDX]
//
// Prints one line per check and, on success, "rc_verbs_check: N checks passed" (exit 0);
// otherwise names the failing check (exit 1).
#define _GNU_SOURCE

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

static const char* g_role = "?";
static int g_sock = -1;
static int g_passed = 0;
static char g_check[160] = "setup";

// ---------------------------------------------------------------------------------------------
// Reporting

static void begin(const char* format, ...) __attribute__((format(printf, 1, 2)));
static void begin(const char* format, ...) {
  va_list args;
  va_start(args, format);
  vsnprintf(g_check, sizeof g_check, format, args);
  va_end(args);
}

static void pass(void) {
  ++g_passed;
  printf("rc_verbs_check: [%s] ok %2d  %s\n", g_role, g_passed, g_check);
  fflush(stdout);
}

static void fail(const char* format, ...) __attribute__((format(printf, 1, 2), noreturn));
static void fail(const char* format, ...) {
  char detail[512];
  va_list args;
  va_start(args, format);
  vsnprintf(detail, sizeof detail, format, args);
  va_end(args);
  printf("rc_verbs_check: [%s] FAILED check \"%s\": %s\n", g_role, g_check, detail);
  fflush(stdout);
  exit(1);
}

static double now_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

// ---------------------------------------------------------------------------------------------
// The out-of-band TCP channel

static void send_all(const void* data, size_t size) {
  const char* p = data;
  while (size > 0) {
    const ssize_t n = send(g_sock, p, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      fail("cannot write to the peer: %s", strerror(errno));
    }
    p += n;
    size -= (size_t)n;
  }
}

// Reads exactly `size` bytes within kPeerSeconds; `what` names what is awaited.
static void receive_all(void* data, size_t size, const char* what) {
  char* p = data;
  const double deadline = now_seconds() + kPeerSeconds;
  while (size > 0) {
    const double left = deadline - now_seconds();
    struct pollfd fd = {.fd = g_sock, .events = POLLIN};
    const int ready = left > 0 ? poll(&fd, 1, (int)(left * 1000) + 1) : 0;
    if (ready < 0 && errno == EINTR) {
      continue;
    }
    if (ready == 0) {
      fail("the peer did not reach %s within %d s", what, kPeerSeconds);
    }
    const ssize_t n = recv(g_sock, p, size, 0);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n == 0) {
      fail("the peer closed the connection before %s (it failed or exited)", what);
    }
    if (n < 0) {
      fail("cannot read from the peer: %s", strerror(errno));
    }
    p += n;
    size -= (size_t)n;
  }
}

// Both ends reach the same point before either goes on.
static void sync_point(const char* label) {
  char mine[kLabelSize] = {0};
  char theirs[kLabelSize + 1] = {0};
  snprintf(mine, sizeof mine, "%s", label);
  send_all(mine, sizeof mine);
  char what[64];
  snprintf(what, sizeof what, "sync point \"%s\"", mine);
  receive_all(theirs, kLabelSize, what);
  if (memcmp(mine, theirs, kLabelSize) != 0) {
    fail("out of step with the peer: here at \"%s\", the peer at \"%s\"", mine, theirs);
  }
}

static void exchange(const struct remote* local, struct remote* peer) {
  char text[kInfoSize] = {0};
  char gid[33];
  for (int i = 0; i < 16; ++i) {
    snprintf(gid + 2 * i, 3, "%02x", local->gid.raw[i]);
  }
  snprintf(text, sizeof text, "%08x %08x %s %016llx %08x", local->qpn, local->psn, gid,
           (unsigned long long)local->addr, local->rkey);
  send_all(text, sizeof text);
  char answer[kInfoSize + 1] = {0};
  receive_all(answer, kInfoSize, "the connection exchange");
  unsigned long long addr = 0;
  char peer_gid[33] = {0};
  if (sscanf(answer, "%8x %8x %32s %16llx %8x", &peer->qpn, &peer->psn, peer_gid, &addr,
             &peer->rkey) != 5 ||
      strlen(peer_gid) != 32) {
    fail("the peer's connection message is malformed: \"%.*s\"", kInfoSize, answer);
  }
  for (int i = 0; i < 16; ++i) {
    unsigned byte = 0;
    sscanf(peer_gid + 2 * i, "%2x", &byte);
    peer->gid.raw[i] = (uint8_t)byte;
  }
  peer->addr = addr;
}

static void listen_and_accept(int port) {
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  const int one = 1;
  setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (listener < 0 || bind(listener, (struct sockaddr*)&address, sizeof address) != 0 ||
      listen(listener, 1) != 0) {
    fail("cannot listen on 127.0.0.1:%d: %s", port, strerror(errno));
  }
  printf("rc_verbs_check: [%s] listening on 127.0.0.1:%d\n", g_role, port);
  fflush(stdout);
  struct pollfd fd = {.fd = listener, .events = POLLIN};
  if (poll(&fd, 1, kPeerSeconds * 1000) <= 0) {
    fail("no client connected to 127.0.0.1:%d within %d s", port, kPeerSeconds);
  }
  g_sock = accept(listener, NULL, NULL);
  if (g_sock < 0) {
    fail("accept: %s", strerror(errno));
  }
  close(listener);
}

static void connect_to(const char* host, const char* port) {
  struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM};
  struct addrinfo* found = NULL;
  const int error = getaddrinfo(host, port, &hints, &found);
  if (error != 0) {
    fail("cannot resolve %s:%s: %s", host, port, gai_strerror(error));
  }
  const struct sockaddr_in* address = (const struct sockaddr_in*)found->ai_addr;
  if ((ntohl(address->sin_addr.s_addr) >> 24) != 127) {
    freeaddrinfo(found);
    fail("%s is not a loopback address: this check talks to its server on this machine only", host);
  }
  // The server may not listen yet: retry a refused connection for a while.
  const double deadline = now_seconds() + kConnectSeconds;
  while (true) {
    g_sock = socket(AF_INET, SOCK_STREAM, 0);
    if (g_sock >= 0 && connect(g_sock, found->ai_addr, found->ai_addrlen) == 0) {
      break;
    }
    const int why = errno;
    close(g_sock);
    if (now_seconds() > deadline) {
      freeaddrinfo(found);
      fail("cannot connect to %s:%s within %d s: %s", host, port, kConnectSeconds, strerror(why));
    }
    usleep(50 * 1000);
  }
  freeaddrinfo(found);
  const int one = 1;
  setsockopt(g_sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

// ---------------------------------------------------------------------------------------------
// Patterns

// Byte i of a transfer of `size` bytes by `verb`: a different sequence for each size and verb, so
// that a transfer that lands in the wrong place, or not at all, never matches by chance.
static uint8_t pattern(size_t i, size_t size, enum verb verb) {
  uint32_t x = (uint32_t)i * 2654435761u ^ (uint32_t)size * 40503u ^ (uint32_t)verb * 0x9e3779b9u;
  x ^= x >> 15;
  x *= 0x2c1b3c6du;
  x ^= x >> 12;
  return (uint8_t)x;
}

static void fill(uint8_t* p, size_t size, enum verb verb) {
  for (size_t i = 0; i < size; ++i) {
    p[i] = pattern(i, size, verb);
  }
}

// Before a transfer into p: the bytes it must write hold anything but what it will write, and
// the guard after them holds kGuardByte.
static void prepare_target(uint8_t* p, size_t size, enum verb verb) {
  for (size_t i = 0; i < size; ++i) {
    p[i] = (uint8_t)~pattern(i, size, verb);
  }
  memset(p + size, kGuardByte, kGuard);
}

static void verify(const uint8_t* p, size_t size, enum verb verb) {
  for (size_t i = 0; i < size; ++i) {
    if (p[i] != pattern(i, size, verb)) {
      fail("byte %zu of %zu is 0x%02x, expected 0x%02x", i, size, p[i], pattern(i, size, verb));
    }
  }
  for (size_t i = 0; i < kGuard; ++i) {
    if (p[size + i] != kGuardByte) {
      fail("byte %zu past the end of the %zu-byte transfer was overwritten (0x%02x)", i, size,
           p[size + i]);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Completions

// The next completion of `cq`, within kCompletionSeconds.
static struct ibv_wc next_completion(struct ibv_cq* cq, const char* what) {
  struct ibv_wc wc;
  const double deadline = now_seconds() + kCompletionSeconds;
  for (unsigned empty = 0;; ++empty) {
    const int n = ibv_poll_cq(cq, 1, &wc);
    if (n < 0) {
      fail("ibv_poll_cq returned %d while waiting for %s", n, what);
    }
    if (n == 1) {
      return wc;
    }
    if (empty % 1024 == 1023) {
      if (now_seconds() > deadline) {
        fail("no completion for %s within %d s", what, kCompletionSeconds);
      }
      const struct timespec pause = {0, 20 * 1000};
      nanosleep(&pause, NULL);
    }
  }
}

// Fails unless no completion arrives for `seconds`.
static void expect_no_completion(struct ibv_cq* cq, double seconds) {
  struct ibv_wc wc;
  const double deadline = now_seconds() + seconds;
  while (now_seconds() < deadline) {
    const int n = ibv_poll_cq(cq, 1, &wc);
    if (n != 0) {
      fail("unexpected completion: ibv_poll_cq returned %d (wr_id %llu, status %s)", n,
           (unsigned long long)wc.wr_id, n > 0 ? ibv_wc_status_str(wc.status) : "-");
    }
    const struct timespec pause = {0, 100 * 1000};
    nanosleep(&pause, NULL);
  }
}

static const char* opcode_name(enum ibv_wc_opcode opcode) {
  switch (opcode) {
    case IBV_WC_SEND:
      return "IBV_WC_SEND";
    case IBV_WC_RDMA_WRITE:
      return "IBV_WC_RDMA_WRITE";
    case IBV_WC_RDMA_READ:
      return "IBV_WC_RDMA_READ";
    case IBV_WC_RECV:
      return "IBV_WC_RECV";
    case IBV_WC_RECV_RDMA_WITH_IMM:
      return "IBV_WC_RECV_RDMA_WITH_IMM";
    default:
      return "another opcode";
  }
}

// A successful completion of work request `wr_id` on `qp`, with `opcode` and (unless
// byte_len < 0) that length.
static void expect_success(const struct ibv_wc* wc, const struct ibv_qp* qp, uint64_t wr_id,
                           enum ibv_wc_opcode opcode, long byte_len) {
  if (wc->status != IBV_WC_SUCCESS) {
    fail("completion status %s (%d, vendor_err 0x%x), expected IBV_WC_SUCCESS",
         ibv_wc_status_str(wc->status), wc->status, wc->vendor_err);
  }
  if (wc->wr_id != wr_id) {
    fail("completion for wr_id %llu, expected %llu", (unsigned long long)wc->wr_id,
         (unsigned long long)wr_id);
  }
  if (wc->qp_num != qp->qp_num) {
    fail("completion for QP 0x%x, expected 0x%x", wc->qp_num, qp->qp_num);
  }
  if (wc->opcode != opcode) {
    fail("completion opcode %s (%d), expected %s", opcode_name(wc->opcode), wc->opcode,
         opcode_name(opcode));
  }
  if (byte_len >= 0 && wc->byte_len != (uint32_t)byte_len) {
    fail("completion byte_len %u, expected %ld", wc->byte_len, byte_len);
  }
}

// A completion of work request `wr_id` with error `status` (its opcode is undefined then).
static void expect_error(const struct ibv_wc* wc, uint64_t wr_id, enum ibv_wc_status status) {
  if (wc->status != status) {
    fail("completion status %s (%d), expected %s", ibv_wc_status_str(wc->status), wc->status,
         ibv_wc_status_str(status));
  }
  if (wc->wr_id != wr_id) {
    fail("completion for wr_id %llu, expected %llu", (unsigned long long)wc->wr_id,
         (unsigned long long)wr_id);
  }
}

static void expect_state(struct ibv_qp* qp, enum ibv_qp_state expected) {
  struct ibv_qp_attr attr;
  struct ibv_qp_init_attr init;
  const int error = ibv_query_qp(qp, &attr, IBV_QP_STATE, &init);
  if (error != 0) {
    fail("ibv_query_qp: %s", strerror(error));
  }
  if (attr.qp_state != expected) {
    fail("the QP is in state %d, expected %d", attr.qp_state, expected);
  }
}

// ---------------------------------------------------------------------------------------------
// Resources

static void open_device(struct device* d, const char* name, int gid_index) {
  int count = 0;
  struct ibv_device** list = ibv_get_device_list(&count);
  if (list == NULL || count == 0) {
    fail("no RDMA device found (ibv_get_device_list: %s)", list == NULL ? strerror(errno) : "0");
  }
  struct ibv_device* chosen = NULL;
  for (int i = 0; i < count && chosen == NULL; ++i) {
    if (name == NULL || strcmp(ibv_get_device_name(list[i]), name) == 0) {
      chosen = list[i];
    }
  }
  if (chosen == NULL) {
    fail("no RDMA device named %s", name);
  }
  d->context = ibv_open_device(chosen);
  if (d->context == NULL) {
    fail("ibv_open_device(%s): %s", ibv_get_device_name(chosen), strerror(errno));
  }
  ibv_free_device_list(list);
  if (ibv_query_device(d->context, &d->attr) != 0) {
    fail("ibv_query_device: %s", strerror(errno));
  }
  struct ibv_port_attr port;
  if (ibv_query_port(d->context, kPort, &port) != 0) {
    fail("ibv_query_port: %s", strerror(errno));
  }
  if (port.state != IBV_PORT_ACTIVE) {
    fail("port %d is not active (state %d)", kPort, port.state);
  }
  if (port.max_msg_sz < kMaxSize) {
    fail("the port's max_msg_sz %u is below %d", port.max_msg_sz, kMaxSize);
  }
  d->mtu = port.active_mtu;
  d->gid_index = gid_index;
  if (ibv_query_gid(d->context, kPort, gid_index, &d->gid) != 0) {
    fail("ibv_query_gid(index %d): %s", gid_index, strerror(errno));
  }
  d->pd = ibv_alloc_pd(d->context);
  if (d->pd == NULL) {
    fail("ibv_alloc_pd: %s", strerror(errno));
  }
  if (posix_memalign((void**)&d->buffer, 4096, kBufferSize) != 0) {
    fail("cannot allocate %d bytes", kBufferSize);
  }
  memset(d->buffer, 0, kBufferSize);
  d->mr = ibv_reg_mr(d->pd, d->buffer, kBufferSize,
                     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
  if (d->mr == NULL) {
    fail("ibv_reg_mr(%d bytes): %s", kBufferSize, strerror(errno));
  }
  printf("rc_verbs_check: [%s] device %s, max_sge %d, max_qp_wr %d, GID index %d\n", g_role,
         ibv_get_device_name(d->context->device), d->attr.max_sge, d->attr.max_qp_wr, gid_index);
  fflush(stdout);
}

// An RC QP with its own CQ, `depth` deep each way, with the ibv_wr_* interface, moved to INIT.
static void create_endpoint(struct device* d, struct endpoint* e, uint32_t depth) {
  memset(e, 0, sizeof *e);
  e->cq = ibv_create_cq(d->context, (int)(2 * depth + 1), NULL, NULL, 0);
  if (e->cq == NULL) {
    fail("ibv_create_cq: %s", strerror(errno));
  }
  struct ibv_qp_init_attr_ex attr = {
      .send_cq = e->cq,
      .recv_cq = e->cq,
      .cap = {.max_send_wr = depth, .max_recv_wr = depth, .max_send_sge = 1, .max_recv_sge = 1},
      .qp_type = IBV_QPT_RC,
      .comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
      .pd = d->pd,
      .send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE |
                        IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ,
  };
  e->qp = ibv_create_qp_ex(d->context, &attr);
  if (e->qp == NULL) {
    fail("ibv_create_qp_ex: %s", strerror(errno));
  }
  e->depth = attr.cap.max_send_wr;
  e->qpx = ibv_qp_to_qp_ex(e->qp);
  if (e->qpx == NULL) {
    fail("ibv_qp_to_qp_ex returned NULL for a QP made with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS");
  }
  struct ibv_qp_attr init = {
      .qp_state = IBV_QPS_INIT,
      .pkey_index = 0,
      .port_num = kPort,
      .qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
  };
  const int error = ibv_modify_qp(
      e->qp, &init, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
  if (error != 0) {
    fail("ibv_modify_qp(RESET->INIT): %s", strerror(error));
  }
}

// Tells the peer about e (and the memory `addr`/`rkey`), learns about its QP, and moves e to RTS.
static void connect_endpoint(struct device* d, struct endpoint* e, uint64_t addr, uint32_t rkey) {
  const struct remote local = {.qpn = e->qp->qp_num,
                               .psn = (uint32_t)(lrand48() & 0xffffff),
                               .gid = d->gid,
                               .addr = addr,
                               .rkey = rkey};
  exchange(&local, &e->peer);
  struct ibv_qp_attr rtr = {
      .qp_state = IBV_QPS_RTR,
      .path_mtu = d->mtu,
      .dest_qp_num = e->peer.qpn,
      .rq_psn = e->peer.psn,
      .max_dest_rd_atomic = 1,
      .min_rnr_timer = 12,
      .ah_attr = {.is_global = 1,
                  .port_num = kPort,
                  .grh = {.dgid = e->peer.gid,
                          .sgid_index = (uint8_t)d->gid_index,
                          .hop_limit = 1}},
  };
  int error = ibv_modify_qp(e->qp, &rtr,
                            IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
  if (error != 0) {
    fail("ibv_modify_qp(INIT->RTR): %s", strerror(error));
  }
  struct ibv_qp_attr rts = {
      .qp_state = IBV_QPS_RTS,
      .sq_psn = local.psn,
      .timeout = 14,
      .retry_cnt = 7,
      .rnr_retry = 7,
      .max_rd_atomic = 1,
  };
  error = ibv_modify_qp(e->qp, &rts,
                        IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                            IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
  if (error != 0) {
    fail("ibv_modify_qp(RTR->RTS): %s", strerror(error));
  }
}

static void destroy_endpoint(struct endpoint* e) {
  int error = ibv_destroy_qp(e->qp);
  if (error != 0) {
    fail("ibv_destroy_qp: %s", strerror(error));
  }
  error = ibv_destroy_cq(e->cq);
  if (error != 0) {
    fail("ibv_destroy_cq: %s", strerror(error));
  }
}

static void close_device(struct device* d) {
  int error = ibv_dereg_mr(d->mr);
  if (error != 0) {
    fail("ibv_dereg_mr: %s", strerror(error));
  }
  error = ibv_dealloc_pd(d->pd);
  if (error != 0) {
    fail("ibv_dealloc_pd: %s", strerror(error));
  }
  error = ibv_close_device(d->context);
  if (error != 0) {
    fail("ibv_close_device: %s", strerror(error));
  }
  free(d->buffer);
}

// ---------------------------------------------------------------------------------------------
// Posting

static struct ibv_sge sge_of(const struct device* d, size_t offset, size_t length) {
  return (struct ibv_sge){
      .addr = (uintptr_t)(d->buffer + offset), .length = (uint32_t)length, .lkey = d->mr->lkey};
}

static void post_recv(struct endpoint* e, uint64_t wr_id, struct ibv_sge* sge, int num_sge) {
  struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = sge, .num_sge = num_sge};
  struct ibv_recv_wr* bad = NULL;
  const int error = ibv_post_recv(e->qp, &wr, &bad);
  if (error != 0) {
    fail("ibv_post_recv: %s (%d)", strerror(error), error);
  }
}

// Posts one signaled work request; returns ibv_post_send's answer.
static int try_post_send(struct endpoint* e, uint64_t wr_id, enum ibv_wr_opcode opcode,
                         struct ibv_sge* sge, int num_sge, uint64_t remote_addr, uint32_t rkey,
                         struct ibv_send_wr** bad) {
  struct ibv_send_wr wr = {
      .wr_id = wr_id,
      .sg_list = sge,
      .num_sge = num_sge,
      .opcode = opcode,
      .send_flags = IBV_SEND_SIGNALED,
      .wr.rdma = {.remote_addr = remote_addr, .rkey = rkey},
  };
  *bad = NULL;
  const int error = ibv_post_send(e->qp, &wr, bad);
  if (error != 0 && *bad != &wr) {
    fail("ibv_post_send returned %d but set bad_wr to %p, not the refused request", error,
         (void*)*bad);
  }
  return error;
}

static void post_send(struct endpoint* e, uint64_t wr_id, enum ibv_wr_opcode opcode,
                      struct ibv_sge* sge, uint64_t remote_addr, uint32_t rkey) {
  struct ibv_send_wr* bad;
  const int error = try_post_send(e, wr_id, opcode, sge, 1, remote_addr, rkey, &bad);
  if (error != 0) {
    fail("ibv_post_send: %s (%d)", strerror(error), error);
  }
}

static uint32_t immediate_for(size_t size) {
  return 0xc0de0000u ^ (uint32_t)size;
}

// ---------------------------------------------------------------------------------------------
// The transfers

// Regions of each side's buffer: the server receives SENDs in region 0, WRITEs in region 1 and
// is READ from region 2; the client sends from regions 0 and 1 and READs into region 2.
static size_t region(int n) {
  return (size_t)n * kRegion;
}

// `note` follows each check's name.
static void transfers(struct device* d, struct endpoint* e, bool server, size_t size,
                      const char* note) {
  const uint64_t id = size << 4;

  // SEND / RECV
  begin("SEND/RECV, size %zu%s", size, note);
  if (server) {
    prepare_target(d->buffer + region(0), size, kVerbSend);
    struct ibv_sge sge = sge_of(d, region(0), size + kGuard);
    post_recv(e, id | 1, &sge, 1);
    sync_point("send posted");
    const struct ibv_wc wc = next_completion(e->cq, "the receive");
    expect_success(&wc, e->qp, id | 1, IBV_WC_RECV, (long)size);
    verify(d->buffer + region(0), size, kVerbSend);
  } else {
    fill(d->buffer + region(0), size, kVerbSend);
    sync_point("send posted");
    struct ibv_sge sge = sge_of(d, region(0), size);
    post_send(e, id | 2, IBV_WR_SEND, &sge, 0, 0);
    const struct ibv_wc wc = next_completion(e->cq, "the send");
    expect_success(&wc, e->qp, id | 2, IBV_WC_SEND, -1);
  }
  pass();
  sync_point("send done");

  // RDMA WRITE with immediate, through the ibv_wr_* interface
  begin("RDMA WRITE with immediate (ibv_wr_*), size %zu%s", size, note);
  if (server) {
    prepare_target(d->buffer + region(1), size, kVerbWrite);
    post_recv(e, id | 3, NULL, 0);
    sync_point("write posted");
    const struct ibv_wc wc = next_completion(e->cq, "the receive of the immediate");
    expect_success(&wc, e->qp, id | 3, IBV_WC_RECV_RDMA_WITH_IMM, (long)size);
    if ((wc.wc_flags & IBV_WC_WITH_IMM) == 0) {
      fail("the completion lacks IBV_WC_WITH_IMM (wc_flags 0x%x)", wc.wc_flags);
    }
    if (be32toh(wc.imm_data) != immediate_for(size)) {
      fail("immediate 0x%08x, expected 0x%08x", be32toh(wc.imm_data), immediate_for(size));
    }
    verify(d->buffer + region(1), size, kVerbWrite);
  } else {
    fill(d->buffer + region(1), size, kVerbWrite);
    sync_point("write posted");
    ibv_wr_start(e->qpx);
    e->qpx->wr_id = id | 4;
    e->qpx->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_rdma_write_imm(e->qpx, e->peer.rkey, e->peer.addr + region(1),
                          htobe32(immediate_for(size)));
    ibv_wr_set_sge(e->qpx, d->mr->lkey, (uintptr_t)(d->buffer + region(1)), (uint32_t)size);
    const int error = ibv_wr_complete(e->qpx);
    if (error != 0) {
      fail("ibv_wr_complete: %s (%d)", strerror(error), error);
    }
    const struct ibv_wc wc = next_completion(e->cq, "the write");
    expect_success(&wc, e->qp, id | 4, IBV_WC_RDMA_WRITE, -1);
  }
  pass();
  sync_point("write done");

  // RDMA READ
  begin("RDMA READ, size %zu%s", size, note);
  if (server) {
    fill(d->buffer + region(2), size, kVerbRead);
    sync_point("read source ready");
  } else {
    prepare_target(d->buffer + region(2), size, kVerbRead);
    sync_point("read source ready");
    struct ibv_sge sge = sge_of(d, region(2), size);
    post_send(e, id | 5, IBV_WR_RDMA_READ, &sge, e->peer.addr + region(2), e->peer.rkey);
    const struct ibv_wc wc = next_completion(e->cq, "the read");
    expect_success(&wc, e->qp, id | 5, IBV_WC_RDMA_READ, (long)size);
    verify(d->buffer + region(2), size, kVerbRead);
    pass();
  }
  sync_point("read done");
}

// ---------------------------------------------------------------------------------------------
// The verbs contract (client side; the server only makes the peers of fresh QP pairs)

static void expect_errno(const char* call, int got, int expected) {
  if (got != expected) {
    fail("%s returned %d (%s), expected %d (%s)", call, got, got > 0 ? strerror(got) : "-",
         expected, strerror(expected));
  }
}

static void expect_qp_refused(struct device* d, struct ibv_qp_init_attr* attr, int expected) {
  errno = 0;
  struct ibv_qp* qp = ibv_create_qp(d->pd, attr);
  if (qp != NULL) {
    const uint32_t qpn = qp->qp_num;
    ibv_destroy_qp(qp);
    fail("ibv_create_qp succeeded (QP 0x%x), expected NULL with errno %s", qpn, strerror(expected));
  }
  if (errno != expected) {
    fail("ibv_create_qp returned NULL with errno %d (%s), expected %d (%s)", errno, strerror(errno),
         expected, strerror(expected));
  }
}

// Checks that need no peer: requests the device must refuse, on the main QP and on new QPs.
static void local_contract(struct device* d, struct endpoint* main_qp) {
  const int too_many = d->attr.max_sge + 1;
  struct ibv_sge sges[8];
  if (too_many > 8) {
    fail("the device reports max_sge %d; this check expects a small limit", d->attr.max_sge);
  }
  for (int i = 0; i < too_many; ++i) {
    sges[i] = sge_of(d, region(0) + (size_t)i * 64, 64);
  }

  begin("ibv_post_send with num_sge %d (max_sge %d) -> EINVAL", too_many, d->attr.max_sge);
  struct ibv_send_wr* bad_send;
  expect_errno("ibv_post_send",
               try_post_send(main_qp, 90, IBV_WR_RDMA_WRITE, sges, too_many,
                             main_qp->peer.addr + region(1), main_qp->peer.rkey, &bad_send),
               EINVAL);
  pass();

  begin("ibv_post_recv with num_sge %d (max_sge %d) -> EINVAL", too_many, d->attr.max_sge);
  struct ibv_recv_wr recv = {.wr_id = 91, .sg_list = sges, .num_sge = too_many};
  struct ibv_recv_wr* bad_recv = NULL;
  expect_errno("ibv_post_recv", ibv_post_recv(main_qp->qp, &recv, &bad_recv), EINVAL);
  if (bad_recv != &recv) {
    fail("bad_wr is %p, not the refused request", (void*)bad_recv);
  }
  pass();

  struct ibv_qp_init_attr base = {
      .send_cq = main_qp->cq,
      .recv_cq = main_qp->cq,
      .cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1},
      .qp_type = IBV_QPT_RC,
  };
  begin("ibv_create_qp with max_send_sge %d -> NULL, errno EINVAL", too_many);
  struct ibv_qp_init_attr attr = base;
  attr.cap.max_send_sge = (uint32_t)too_many;
  expect_qp_refused(d, &attr, EINVAL);
  pass();

  begin("ibv_create_qp with max_recv_sge %d -> NULL, errno EINVAL", too_many);
  attr = base;
  attr.cap.max_recv_sge = (uint32_t)too_many;
  expect_qp_refused(d, &attr, EINVAL);
  pass();

  begin("ibv_create_qp with max_send_wr %d (max_qp_wr %d) -> NULL, errno EINVAL",
        d->attr.max_qp_wr + 1, d->attr.max_qp_wr);
  attr = base;
  attr.cap.max_send_wr = (uint32_t)d->attr.max_qp_wr + 1;
  expect_qp_refused(d, &attr, EINVAL);
  pass();

  begin("ibv_create_qp of a UD QP -> NULL, errno EOPNOTSUPP");
  attr = base;
  attr.qp_type = IBV_QPT_UD;
  expect_qp_refused(d, &attr, EOPNOTSUPP);
  pass();

  // A QP in INIT may not send yet; INIT->RTR needs its address, MTU, peer QPN, PSN, ...
  struct ibv_cq* cq = ibv_create_cq(d->context, 16, NULL, NULL, 0);
  if (cq == NULL) {
    fail("ibv_create_cq: %s", strerror(errno));
  }
  attr = base;
  attr.send_cq = attr.recv_cq = cq;
  struct ibv_qp* qp = ibv_create_qp(d->pd, &attr);
  if (qp == NULL) {
    fail("ibv_create_qp: %s", strerror(errno));
  }
  struct ibv_qp_attr init = {
      .qp_state = IBV_QPS_INIT, .port_num = kPort, .qp_access_flags = IBV_ACCESS_REMOTE_WRITE};
  expect_errno("ibv_modify_qp(RESET->INIT)",
               ibv_modify_qp(qp, &init,
                             IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
               0);
  struct endpoint in_init = {.cq = cq, .qp = qp, .peer = main_qp->peer};

  begin("ibv_post_send on a QP in INIT -> EINVAL");
  struct ibv_sge one = sge_of(d, region(0), 64);
  expect_errno("ibv_post_send",
               try_post_send(&in_init, 92, IBV_WR_RDMA_WRITE, &one, 1,
                             main_qp->peer.addr + region(1), main_qp->peer.rkey, &bad_send),
               EINVAL);
  expect_no_completion(cq, 0.2);
  pass();

  begin("ibv_modify_qp INIT->RTR with only IBV_QP_STATE -> EINVAL, QP stays in INIT");
  struct ibv_qp_attr rtr = {.qp_state = IBV_QPS_RTR};
  expect_errno("ibv_modify_qp", ibv_modify_qp(qp, &rtr, IBV_QP_STATE), EINVAL);
  expect_state(qp, IBV_QPS_INIT);
  pass();

  begin("ibv_modify_qp INIT->RTR without IBV_QP_AV -> EINVAL");
  rtr = (struct ibv_qp_attr){.qp_state = IBV_QPS_RTR,
                             .path_mtu = d->mtu,
                             .dest_qp_num = main_qp->peer.qpn,
                             .rq_psn = 0,
                             .max_dest_rd_atomic = 1,
                             .min_rnr_timer = 12};
  expect_errno("ibv_modify_qp",
               ibv_modify_qp(qp, &rtr,
                             IBV_QP_STATE | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                 IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER),
               EINVAL);
  expect_state(qp, IBV_QPS_INIT);
  pass();

  if (ibv_destroy_qp(qp) != 0 || ibv_destroy_cq(cq) != 0) {
    fail("cannot destroy the QP in INIT or its CQ");
  }

  // A send queue holds max_send_wr requests until their completions are polled.
  begin("%u unpolled sends fill a send queue of depth %u; one more -> ENOMEM", main_qp->depth,
        main_qp->depth);
  for (uint32_t i = 0; i < main_qp->depth; ++i) {
    struct ibv_sge sge = sge_of(d, region(0) + i, 1);
    expect_errno("ibv_post_send (filling the queue)",
                 try_post_send(main_qp, 100 + i, IBV_WR_RDMA_WRITE, &sge, 1,
                               main_qp->peer.addr + region(1) + i, main_qp->peer.rkey, &bad_send),
                 0);
  }
  struct ibv_sge extra = sge_of(d, region(0), 1);
  expect_errno("ibv_post_send (one past the depth)",
               try_post_send(main_qp, 99, IBV_WR_RDMA_WRITE, &extra, 1,
                             main_qp->peer.addr + region(1), main_qp->peer.rkey, &bad_send),
               ENOMEM);
  pass();

  begin("the %u queued sends all complete, in order, and the queue takes requests again",
        main_qp->depth);
  for (uint32_t i = 0; i < main_qp->depth; ++i) {
    const struct ibv_wc wc = next_completion(main_qp->cq, "a queued write");
    expect_success(&wc, main_qp->qp, 100 + i, IBV_WC_RDMA_WRITE, -1);
  }
  post_send(main_qp, 98, IBV_WR_RDMA_WRITE, &extra, main_qp->peer.addr + region(1),
            main_qp->peer.rkey);
  const struct ibv_wc wc = next_completion(main_qp->cq, "the write after the queue drained");
  expect_success(&wc, main_qp->qp, 98, IBV_WC_RDMA_WRITE, -1);
  expect_no_completion(main_qp->cq, 0.1);
  pass();
}

// A deregistered MR's key: a key that was valid and no longer is.
static uint32_t stale_key(struct device* d, bool remote) {
  struct ibv_mr* mr = ibv_reg_mr(d->pd, d->buffer + region(2), 4096,
                                 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  if (mr == NULL) {
    fail("ibv_reg_mr: %s", strerror(errno));
  }
  const uint32_t key = remote ? mr->rkey : mr->lkey;
  const int error = ibv_dereg_mr(mr);
  if (error != 0) {
    fail("ibv_dereg_mr: %s", strerror(error));
  }
  if (key == d->mr->lkey || key == d->mr->rkey) {
    fail("a new MR got the main MR's key 0x%x", key);
  }
  return key;
}

// On a fresh QP pair: a request whose lkey is stale completes IBV_WC_LOC_PROT_ERR, the QP goes to
// ERR, and what is posted after completes IBV_WC_WR_FLUSH_ERR.
static void bad_lkey(struct device* d, bool server) {
  struct endpoint e;
  create_endpoint(d, &e, kAuxDepth);
  connect_endpoint(d, &e, (uintptr_t)d->buffer, d->mr->rkey);
  sync_point("bad lkey pair connected");
  if (!server) {
    begin("RDMA WRITE with a deregistered lkey -> IBV_WC_LOC_PROT_ERR");
    const uint32_t key = stale_key(d, false);
    struct ibv_sge sge = {.addr = (uintptr_t)(d->buffer + region(0)), .length = 64, .lkey = key};
    post_send(&e, 200, IBV_WR_RDMA_WRITE, &sge, e.peer.addr + region(1), e.peer.rkey);
    struct ibv_wc wc = next_completion(e.cq, "the write with a bad lkey");
    expect_error(&wc, 200, IBV_WC_LOC_PROT_ERR);
    pass();

    begin("after IBV_WC_LOC_PROT_ERR the QP is in ERR");
    expect_state(e.qp, IBV_QPS_ERR);
    pass();

    begin("a send posted to the QP in ERR completes IBV_WC_WR_FLUSH_ERR");
    struct ibv_sge good = sge_of(d, region(0), 64);
    post_send(&e, 201, IBV_WR_RDMA_WRITE, &good, e.peer.addr + region(1), e.peer.rkey);
    wc = next_completion(e.cq, "the write posted in ERR");
    expect_error(&wc, 201, IBV_WC_WR_FLUSH_ERR);
    pass();

    begin("a receive posted to the QP in ERR completes IBV_WC_WR_FLUSH_ERR");
    post_recv(&e, 202, &good, 1);
    wc = next_completion(e.cq, "the receive posted in ERR");
    expect_error(&wc, 202, IBV_WC_WR_FLUSH_ERR);
    expect_no_completion(e.cq, 0.1);
    pass();
  }
  sync_point("bad lkey done");
  destroy_endpoint(&e);
}

// On a fresh QP pair: a WRITE to memory whose MR the server deregistered completes
// IBV_WC_REM_ACCESS_ERR, and the QP goes to ERR.
static void bad_rkey(struct device* d, bool server) {
  struct endpoint e;
  create_endpoint(d, &e, kAuxDepth);
  // The server offers region 2 under a key it deregisters at once.
  const uint32_t key = server ? stale_key(d, true) : d->mr->rkey;
  connect_endpoint(d, &e, (uintptr_t)(d->buffer + region(2)), key);
  sync_point("bad rkey pair connected");
  if (!server) {
    begin("RDMA WRITE with a deregistered rkey -> IBV_WC_REM_ACCESS_ERR");
    struct ibv_sge sge = sge_of(d, region(0), 64);
    post_send(&e, 300, IBV_WR_RDMA_WRITE, &sge, e.peer.addr, e.peer.rkey);
    const struct ibv_wc wc = next_completion(e.cq, "the write with a bad rkey");
    expect_error(&wc, 300, IBV_WC_REM_ACCESS_ERR);
    pass();

    begin("after IBV_WC_REM_ACCESS_ERR the QP is in ERR");
    expect_state(e.qp, IBV_QPS_ERR);
    pass();
  }
  sync_point("bad rkey done");
  destroy_endpoint(&e);
}

// ---------------------------------------------------------------------------------------------

static void usage(void) {
  fprintf(stderr,
          "usage: rc_verbs_check server PORT [-d DEV] [-g GIDX]\n"
          "       rc_verbs_check client HOST PORT [-d DEV] [-g GIDX]\n");
  exit(2);
}

int main(int argc, char** argv) {
  if (argc < 3) {
    usage();
  }
  const bool server = strcmp(argv[1], "server") == 0;
  if (!server && strcmp(argv[1], "client") != 0) {
    usage();
  }
  g_role = server ? "server" : "client";
  int next = server ? 3 : 4;
  if (argc < next) {
    usage();
  }
  const char* host = server ? NULL : argv[2];
  const char* port = server ? argv[2] : argv[3];
  const char* device_name = NULL;
  int gid_index = 0;
  for (; next < argc; next += 2) {
    if (next + 1 >= argc) {
      usage();
    }
    if (strcmp(argv[next], "-d") == 0) {
      device_name = argv[next + 1];
    } else if (strcmp(argv[next], "-g") == 0) {
      gid_index = atoi(argv[next + 1]);
    } else {
      usage();
    }
  }
  srand48(getpid());

  begin("setup");
  struct device d;
  memset(&d, 0, sizeof d);
  open_device(&d, device_name, gid_index);
  if (server) {
    listen_and_accept(atoi(port));
  } else {
    connect_to(host, port);
  }

  begin("connecting the main QP pair");
  struct endpoint main_qp;
  create_endpoint(&d, &main_qp, kMainDepth);
  connect_endpoint(&d, &main_qp, (uintptr_t)d.buffer, d.mr->rkey);
  sync_point("main pair connected");

  for (size_t i = 0; i < sizeof kSizes / sizeof kSizes[0]; ++i) {
    transfers(&d, &main_qp, server, kSizes[i], "");
  }

  sync_point("contract");
  if (!server) {
    local_contract(&d, &main_qp);
  }
  sync_point("contract done");
  bad_lkey(&d, server);
  bad_rkey(&d, server);

  // The refused requests left the main QP pair as it was.
  transfers(&d, &main_qp, server, 4097, ", again after the contract checks");
  begin("teardown");
  destroy_endpoint(&main_qp);
  close_device(&d);
  sync_point("finished");
  pass();
  close(g_sock);
  printf("rc_verbs_check: %d checks passed\n", g_passed);
  return 0;
}
