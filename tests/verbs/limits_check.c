/* limits_check DEVICE: the device's resource limits answered as a real device answers them.
 *
 * - RC QPs up to the device's max_qp are created, the next one fails with ENOMEM, and one can
 *   be created again once the others are destroyed.
 * - Without CAP_IPC_LOCK, ibv_reg_mr beyond RLIMIT_MEMLOCK fails with ENOMEM, as the kernel's
 *   pinning does, and succeeds again once a registration is released.
 *
 * Prints "limits_check: N checks passed" and exits 0, or names the failed check and exits 1.
 * Run as root under the ERNIC verbs environment (verbs_process_test.cc). */
#define _GNU_SOURCE /* syscall, posix_memalign */
#include <errno.h>
#include <infiniband/verbs.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

static int g_passed = 0;

static void check(int ok, const char* what) {
  if (!ok) {
    fprintf(stderr, "limits_check: FAILED: %s (errno %d: %s)\n", what, errno, strerror(errno));
    exit(1);
  }
  ++g_passed;
}

static struct ibv_qp* create_qp(struct ibv_pd* pd, struct ibv_cq* cq) {
  struct ibv_qp_init_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.send_cq = cq;
  attr.recv_cq = cq;
  attr.qp_type = IBV_QPT_RC;
  attr.cap.max_send_wr = 1;
  attr.cap.max_recv_wr = 1;
  attr.cap.max_send_sge = 1;
  attr.cap.max_recv_sge = 1;
  return ibv_create_qp(pd, &attr);
}

static void qp_limit(struct ibv_context* context, struct ibv_pd* pd, struct ibv_cq* cq,
                     int max_qp) {
  struct ibv_qp** qps = calloc((size_t)max_qp, sizeof *qps);
  check(qps != NULL, "calloc");
  for (int i = 0; i < max_qp; ++i) {
    qps[i] = create_qp(pd, cq);
    if (qps[i] == NULL) {
      fprintf(stderr, "limits_check: QP %d of max_qp %d refused\n", i + 1, max_qp);
    }
    check(qps[i] != NULL, "every QP up to max_qp is created");
  }
  errno = 0;
  struct ibv_qp* beyond = create_qp(pd, cq);
  check(beyond == NULL, "the QP beyond max_qp is refused");
  check(errno == ENOMEM, "... with ENOMEM");
  for (int i = 0; i < max_qp; ++i) {
    check(ibv_destroy_qp(qps[i]) == 0, "ibv_destroy_qp");
  }
  free(qps);
  struct ibv_qp* again = create_qp(pd, cq);
  check(again != NULL, "a QP is created again once the others are destroyed");
  check(ibv_destroy_qp(again) == 0, "ibv_destroy_qp");
  (void)context;
}

static void drop_ipc_lock(void) {
  struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
  memset(data, 0, sizeof data);
  check(syscall(SYS_capget, &header, data) == 0, "capget");
  data[CAP_IPC_LOCK / 32].effective &= ~(1U << (CAP_IPC_LOCK % 32));
  check(syscall(SYS_capset, &header, data) == 0, "capset without CAP_IPC_LOCK");
}

static void memlock_limit(struct ibv_pd* pd) {
  const size_t kLimit = 1u << 20;
  const size_t kPage = (size_t)sysconf(_SC_PAGESIZE);
  drop_ipc_lock();
  struct rlimit limit = {kLimit, kLimit};
  check(setrlimit(RLIMIT_MEMLOCK, &limit) == 0, "setrlimit RLIMIT_MEMLOCK 1 MiB");
  void* half = NULL;
  void* whole = NULL;
  check(posix_memalign(&half, kPage, kLimit / 2) == 0, "posix_memalign");
  check(posix_memalign(&whole, kPage, kLimit) == 0, "posix_memalign");
  const int access = IBV_ACCESS_LOCAL_WRITE;
  struct ibv_mr* first = ibv_reg_mr(pd, half, kLimit / 2, access);
  check(first != NULL, "half the memlock limit registers");
  errno = 0;
  struct ibv_mr* over = ibv_reg_mr(pd, whole, kLimit, access);
  check(over == NULL, "a registration beyond RLIMIT_MEMLOCK is refused");
  check(errno == ENOMEM, "... with ENOMEM");
  check(ibv_dereg_mr(first) == 0, "ibv_dereg_mr");
  struct ibv_mr* fits = ibv_reg_mr(pd, whole, kLimit, access);
  check(fits != NULL, "the whole limit registers once the first is released");
  check(ibv_dereg_mr(fits) == 0, "ibv_dereg_mr");
  free(half);
  free(whole);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: limits_check DEVICE\n");
    return 2;
  }
  int count = 0;
  struct ibv_device** devices = ibv_get_device_list(&count);
  struct ibv_device* device = NULL;
  for (int i = 0; devices != NULL && i < count; ++i) {
    if (strcmp(ibv_get_device_name(devices[i]), argv[1]) == 0) {
      device = devices[i];
    }
  }
  check(device != NULL, "the device is listed");
  struct ibv_context* context = ibv_open_device(device);
  check(context != NULL, "ibv_open_device");
  struct ibv_device_attr attr;
  check(ibv_query_device(context, &attr) == 0, "ibv_query_device");
  check(attr.max_qp > 0 && attr.max_qp <= 65536, "max_qp is a limit");
  struct ibv_pd* pd = ibv_alloc_pd(context);
  check(pd != NULL, "ibv_alloc_pd");
  struct ibv_cq* cq = ibv_create_cq(context, 16, NULL, NULL, 0);
  check(cq != NULL, "ibv_create_cq");

  qp_limit(context, pd, cq, attr.max_qp);
  memlock_limit(pd);

  check(ibv_destroy_cq(cq) == 0, "ibv_destroy_cq");
  check(ibv_dealloc_pd(pd) == 0, "ibv_dealloc_pd");
  check(ibv_close_device(context) == 0, "ibv_close_device");
  ibv_free_device_list(devices);
  printf("limits_check: %d checks passed (max_qp %d)\n", g_passed, attr.max_qp);
  return 0;
}
