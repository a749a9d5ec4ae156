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
#include <pthread.h>
#include <rdma/ib_user_verbs.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static const char kDevicePrefix[] = "/dev/infiniband/";

/* True when `path` names a uverbs entry of an ERNIC device in SYSFS_PATH's folder. */
static int is_ernic_node(const char* path) {
  const size_t prefix = sizeof kDevicePrefix - 1;
  if (strncmp(path, kDevicePrefix, prefix) != 0) {
    return 0;
  }
  const char* name = path + prefix;
  const char* sysfs = getenv("SYSFS_PATH");
  if (sysfs == NULL || *name == '\0' || strchr(name, '/') != NULL) {
    return 0;
  }
  char file[PATH_MAX];
  char ibdev[256] = "";
  if (snprintf(file, sizeof file, "%s/class/infiniband_verbs/%s/ibdev", sysfs, name) >=
      (int)sizeof file) {
    return 0;
  }
  FILE* in = fopen(file, "re");
  if (in == NULL) {
    return 0;
  }
  const int got = fscanf(in, "%255s", ibdev) == 1;
  fclose(in);
  if (!got) {
    return 0;
  }
  /* An instance's folder names its socket; a guest's, the region it reaches its instance by. */
  static const char* const kAttributes[] = {"ernic_socket", "ernic_region"};
  for (size_t i = 0; i < sizeof kAttributes / sizeof kAttributes[0]; ++i) {
    if (snprintf(file, sizeof file, "%s/class/infiniband/%s/%s", sysfs, ibdev, kAttributes[i]) <
            (int)sizeof file &&
        access(file, R_OK) == 0) {
      return 1;
    }
  }
  return 0;
}

typedef int (*open_function)(const char*, int, ...);
typedef int (*stat_function)(const char*, struct stat*);

/* dlsym answers an object pointer; ISO C converts it to a function pointer only by copy. */
static void* next_definition(const char* symbol, void* function, size_t size) {
  void* found = dlsym(RTLD_NEXT, symbol);
  memcpy(function, &found, size);
  return found;
}

static int forward_open(const char* symbol, const char* path, int flags, mode_t mode) {
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

/* The mode argument is there only when the flags create a file. */
#define TAKE_MODE(flags, mode)             \
  do {                                     \
    if ((flags) & (O_CREAT | O_TMPFILE)) { \
      va_list args;                        \
      va_start(args, flags);               \
      (mode) = va_arg(args, mode_t);       \
      va_end(args);                        \
    }                                      \
  } while (0)

int open(const char* path, int flags, ...) {
  mode_t mode = 0;
  TAKE_MODE(flags, mode);
  return forward_open("open", path, flags, mode);
}

int open64(const char* path, int flags, ...) {
  mode_t mode = 0;
  TAKE_MODE(flags, mode);
  return forward_open("open64", path, flags, mode);
}

static int forward_stat(const char* symbol, const char* path, struct stat* buf) {
  stat_function real = NULL;
  next_definition(symbol, &real, sizeof real);
  if (real == NULL) {
    errno = ENOSYS;
    return -1;
  }
  return real(is_ernic_node(path) ? "/dev/null" : path, buf);
}

int stat(const char* path, struct stat* buf) {
  return forward_stat("stat", path, buf);
}

int stat64(const char* path, struct stat64* buf) {
  return forward_stat("stat64", path, (struct stat*)buf);
}

/* Completion channels this library made: the read end libibverbs holds, the write end the
 * provider takes (ernic_comp_channel_writer). */
enum { kMaxChannels = 256 };
static struct {
  int read_end;
  int write_end;
} channels[kMaxChannels];
static int channel_count;
static pthread_mutex_t channels_lock = PTHREAD_MUTEX_INITIALIZER;

/* The write end of the completion channel whose descriptor is `read_end`, or -1. */
__attribute__((visibility("default"))) int ernic_comp_channel_writer(int read_end) {
  int found = -1;
  pthread_mutex_lock(&channels_lock);
  for (int i = 0; i < channel_count; ++i) {
    if (channels[i].read_end == read_end) {
      found = channels[i].write_end;
    }
  }
  pthread_mutex_unlock(&channels_lock);
  return found;
}

static int is_read_only_dev_null(int fd) {
  struct stat st;
  const int flags = fcntl(fd, F_GETFL);
  return flags >= 0 && (flags & O_ACCMODE) == O_RDONLY && fstat(fd, &st) == 0 &&
         S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3);
}

/* Answers CREATE_COMP_CHANNEL as the kernel does: the response's fd, written where the command
 * says; the size of the command written is what write() returns. */
static ssize_t create_comp_channel(const void* buf, size_t size) {
  struct {
    struct ib_uverbs_cmd_hdr header;
    struct ib_uverbs_create_comp_channel body;
  } command;
  if (size < sizeof command) {
    errno = EINVAL;
    return -1;
  }
  memcpy(&command, buf, sizeof command);
  int ends[2];
  if (pipe2(ends, O_CLOEXEC) != 0) {
    return -1;
  }
  fcntl(ends[1], F_SETFL,
        O_NONBLOCK); /* the instance never blocks on a program that does not read */
  pthread_mutex_lock(&channels_lock);
  const int room = channel_count < kMaxChannels;
  if (room) {
    channels[channel_count].read_end = ends[0];
    channels[channel_count].write_end = ends[1];
    ++channel_count;
  }
  pthread_mutex_unlock(&channels_lock);
  if (!room) {
    close(ends[0]);
    close(ends[1]);
    errno = EMFILE;
    return -1;
  }
  struct ib_uverbs_create_comp_channel_resp response = {.fd = (__u32)ends[0]};
  memcpy((void*)(uintptr_t)command.body.response, &response, sizeof response);
  return (ssize_t)size;
}

typedef ssize_t (*write_function)(int, const void*, size_t);

ssize_t write(int fd, const void* buf, size_t size) {
  write_function real = NULL;
  next_definition("write", &real, sizeof real);
  if (real == NULL) {
    errno = ENOSYS;
    return -1;
  }
  const ssize_t written = real(fd, buf, size);
  /* Only a write that failed on a read-only /dev/null, where no program's write succeeds, is
   * looked at: the provider's command channel. */
  if (written >= 0 || errno != EBADF || size < sizeof(struct ib_uverbs_cmd_hdr) ||
      !is_read_only_dev_null(fd)) {
    return written;
  }
  struct ib_uverbs_cmd_hdr header;
  memcpy(&header, buf, sizeof header);
  if (header.command != IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL) {
    errno = EOPNOTSUPP;
    return -1;
  }
  return create_comp_channel(buf, size);
}
