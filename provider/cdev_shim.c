/* The one thing of a kernel RDMA driver an ERNIC device lacks: its character device.
 *
 * libibverbs opens /dev/infiniband/<uverbs entry> for every device it discovers and checks that
 * it is a character device before the provider is asked for a context. An ERNIC instance's device
 * is described in a sysfs folder of the run's own (SYSFS_PATH) and has no node in /dev. Preloaded
 * (LD_PRELOAD), this library answers the open and stat of such a path, and of no other, with
 * /dev/null, which the provider then makes its command channel. Where an administrator made the
 * node (a symbolic link to /dev/null, as the guest image does), this library is not needed. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char kDevicePrefix[] = "/dev/infiniband/";

/* True when `path` names a uverbs entry of an ERNIC device in SYSFS_PATH's folder. */
static int is_ernic_node(const char *path) {
  const size_t prefix = sizeof kDevicePrefix - 1;
  if (strncmp(path, kDevicePrefix, prefix) != 0) {
    return 0;
  }
  const char *name = path + prefix;
  const char *sysfs = getenv("SYSFS_PATH");
  if (sysfs == NULL || *name == '\0' || strchr(name, '/') != NULL) {
    return 0;
  }
  char file[PATH_MAX];
  char ibdev[256] = "";
  if (snprintf(file, sizeof file, "%s/class/infiniband_verbs/%s/ibdev", sysfs, name) >=
      (int)sizeof file) {
    return 0;
  }
  FILE *in = fopen(file, "re");
  if (in == NULL) {
    return 0;
  }
  const int got = fscanf(in, "%255s", ibdev) == 1;
  fclose(in);
  if (!got || snprintf(file, sizeof file, "%s/class/infiniband/%s/ernic_socket", sysfs, ibdev) >=
                  (int)sizeof file) {
    return 0;
  }
  return access(file, R_OK) == 0;
}

typedef int (*open_function)(const char *, int, ...);
typedef int (*stat_function)(const char *, struct stat *);

/* dlsym answers an object pointer; ISO C converts it to a function pointer only by copy. */
static void *next_definition(const char *symbol, void *function, size_t size) {
  void *found = dlsym(RTLD_NEXT, symbol);
  memcpy(function, &found, size);
  return found;
}

static int forward_open(const char *symbol, const char *path, int flags, mode_t mode) {
  open_function real = NULL;
  next_definition(symbol, &real, sizeof real);
  if (real == NULL) {
    errno = ENOSYS;
    return -1;
  }
  if (!is_ernic_node(path)) {
    return real(path, flags, mode);
  }
  return real("/dev/null", flags & (O_ACCMODE | O_CLOEXEC), 0);
}

int open(const char *path, int flags, ...) {
  mode_t mode = 0;
  if (flags & (O_CREAT | O_TMPFILE)) {
    va_list args;
    va_start(args, flags);
    mode = va_arg(args, mode_t);
    va_end(args);
  }
  return forward_open("open", path, flags, mode);
}

int open64(const char *path, int flags, ...) {
  mode_t mode = 0;
  if (flags & (O_CREAT | O_TMPFILE)) {
    va_list args;
    va_start(args, flags);
    mode = va_arg(args, mode_t);
    va_end(args);
  }
  return forward_open("open64", path, flags, mode);
}

static int forward_stat(const char *symbol, const char *path, struct stat *buf) {
  stat_function real = NULL;
  next_definition(symbol, &real, sizeof real);
  if (real == NULL) {
    errno = ENOSYS;
    return -1;
  }
  return real(is_ernic_node(path) ? "/dev/null" : path, buf);
}

int stat(const char *path, struct stat *buf) { return forward_stat("stat", path, buf); }

int stat64(const char *path, struct stat64 *buf) {
  return forward_stat("stat64", path, (struct stat *)buf);
}
