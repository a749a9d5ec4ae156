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

#include "rc_check.h"

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

  // What qperf does without rdma_cm: a RoCE port has no LIDs to route by, and a GID left in
  // the attributes does not count unless is_global says so.
  begin("ibv_modify_qp INIT->RTR addressed by LID, without a GRH -> EINVAL");
  rtr.ah_attr = (struct ibv_ah_attr){
      .dlid = 1,
      .port_num = kPort,
      .grh = {.dgid = main_qp->peer.gid, .sgid_index = (uint8_t)d->gid_index, .hop_limit = 1}};
  expect_errno("ibv_modify_qp",
               ibv_modify_qp(qp, &rtr,
                             IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                 IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER),
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
