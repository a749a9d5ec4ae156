// rc_verbs_check's support (rc_check.h).
#define _GNU_SOURCE

#include "rc_check.h"

const char* g_role = "?";
int g_sock = -1;
int g_passed = 0;
char g_check[160] = "setup";

// ---------------------------------------------------------------------------------------------
// Reporting

void begin(const char* format, ...) {
  va_list args;
  va_start(args, format);
  vsnprintf(g_check, sizeof g_check, format, args);
  va_end(args);
}

void pass(void) {
  ++g_passed;
  printf("rc_verbs_check: [%s] ok %2d  %s\n", g_role, g_passed, g_check);
  fflush(stdout);
}

void fail(const char* format, ...) {
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
void sync_point(const char* label) {
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

void listen_and_accept(int port) {
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

void connect_to(const char* host, const char* port) {
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

void fill(uint8_t* p, size_t size, enum verb verb) {
  for (size_t i = 0; i < size; ++i) {
    p[i] = pattern(i, size, verb);
  }
}

// Before a transfer into p: the bytes it must write hold anything but what it will write, and
// the guard after them holds kGuardByte.
void prepare_target(uint8_t* p, size_t size, enum verb verb) {
  for (size_t i = 0; i < size; ++i) {
    p[i] = (uint8_t)~pattern(i, size, verb);
  }
  memset(p + size, kGuardByte, kGuard);
}

void verify(const uint8_t* p, size_t size, enum verb verb) {
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
struct ibv_wc next_completion(struct ibv_cq* cq, const char* what) {
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
void expect_no_completion(struct ibv_cq* cq, double seconds) {
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
void expect_success(const struct ibv_wc* wc, const struct ibv_qp* qp, uint64_t wr_id,
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
void expect_error(const struct ibv_wc* wc, uint64_t wr_id, enum ibv_wc_status status) {
  if (wc->status != status) {
    fail("completion status %s (%d), expected %s", ibv_wc_status_str(wc->status), wc->status,
         ibv_wc_status_str(status));
  }
  if (wc->wr_id != wr_id) {
    fail("completion for wr_id %llu, expected %llu", (unsigned long long)wc->wr_id,
         (unsigned long long)wr_id);
  }
}

void expect_state(struct ibv_qp* qp, enum ibv_qp_state expected) {
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

void open_device(struct device* d, const char* name, int gid_index) {
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
void create_endpoint(struct device* d, struct endpoint* e, uint32_t depth) {
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
void connect_endpoint(struct device* d, struct endpoint* e, uint64_t addr, uint32_t rkey) {
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

void destroy_endpoint(struct endpoint* e) {
  int error = ibv_destroy_qp(e->qp);
  if (error != 0) {
    fail("ibv_destroy_qp: %s", strerror(error));
  }
  error = ibv_destroy_cq(e->cq);
  if (error != 0) {
    fail("ibv_destroy_cq: %s", strerror(error));
  }
}

void close_device(struct device* d) {
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

struct ibv_sge sge_of(const struct device* d, size_t offset, size_t length) {
  return (struct ibv_sge){
      .addr = (uintptr_t)(d->buffer + offset), .length = (uint32_t)length, .lkey = d->mr->lkey};
}

void post_recv(struct endpoint* e, uint64_t wr_id, struct ibv_sge* sge, int num_sge) {
  struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = sge, .num_sge = num_sge};
  struct ibv_recv_wr* bad = NULL;
  const int error = ibv_post_recv(e->qp, &wr, &bad);
  if (error != 0) {
    fail("ibv_post_recv: %s (%d)", strerror(error), error);
  }
}

// Posts one signaled work request; returns ibv_post_send's answer.
int try_post_send(struct endpoint* e, uint64_t wr_id, enum ibv_wr_opcode opcode,
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

void post_send(struct endpoint* e, uint64_t wr_id, enum ibv_wr_opcode opcode, struct ibv_sge* sge,
               uint64_t remote_addr, uint32_t rkey) {
  struct ibv_send_wr* bad;
  const int error = try_post_send(e, wr_id, opcode, sge, 1, remote_addr, rkey, &bad);
  if (error != 0) {
    fail("ibv_post_send: %s (%d)", strerror(error), error);
  }
}

uint32_t immediate_for(size_t size) {
  return 0xc0de0000u ^ (uint32_t)size;
}

// ---------------------------------------------------------------------------------------------
