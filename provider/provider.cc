// The ERNIC verbs provider: libibverbs loads it (lib<name>-rdmav34.so, named by RDMAV_DRIVERS
// or a driver file) and offers it every device it discovers; it takes the ones whose sysfs folder
// names an ERNIC instance's socket, and serves them through that instance.
#include <fcntl.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "device_identity.h"
#include "provider.h"
#include "send_request.h"

namespace ernic::verbs {
namespace {

constexpr const char* kSocketAttribute = "ernic_socket";
// A guest region, named in a guest's folder (and in a host instance's that serves one): taken
// before the socket, which a guest does not have.
constexpr const char* kRegionAttribute = "ernic_region";

bool wants_debug() {
  static const bool on = std::getenv("ERNIC_VERBS_DEBUG") != nullptr;
  return on;
}

std::string read_attribute(verbs_sysfs_dev* sysfs, const char* name) {
  char value[IBV_SYSFS_PATH_MAX] = {};
  if (ibv_read_ibdev_sysfs_file(value, sizeof value, sysfs, "%s", name) <= 0) {
    return {};
  }
  return value;
}

bool match_device(verbs_sysfs_dev* sysfs) {
  return !read_attribute(sysfs, kSocketAttribute).empty() ||
         !read_attribute(sysfs, kRegionAttribute).empty();
}

verbs_device* alloc_device(verbs_sysfs_dev* sysfs) {
  auto* device = new (std::nothrow) Device{};
  if (device == nullptr) {
    return nullptr;
  }
  device->socket_path = read_attribute(sysfs, kSocketAttribute);
  device->region_path = read_attribute(sysfs, kRegionAttribute);
  return &device->base;
}

void uninit_device(verbs_device* device) {
  delete reinterpret_cast<Device*>(device);
}

int query_device_ex(ibv_context* context, const ibv_query_device_ex_input* input,
                    ibv_device_attr_ex* attr, size_t attr_size) {
  if ((input != nullptr && input->comp_mask != 0) || attr_size < sizeof(ibv_device_attr)) {
    return EINVAL;
  }
  ibv_device_attr_ex full{};
  describe_device(state_of(context).identity, full);
  std::memcpy(attr, &full, std::min(attr_size, sizeof full));
  return 0;
}

int query_port(ibv_context* context, uint8_t port, ibv_port_attr* attr) {
  if (port != 1) {
    return EINVAL;
  }
  describe_port(state_of(context).identity, *attr);
  return 0;
}

// Arms the CQ through the submit ring, behind the requests posted before: the instance writes
// one event to the CQ's channel at its next completion. Solicited-only arming is served as
// arming for any completion (every completion this device makes is one the program asked for).
int req_notify_cq(ibv_cq* cq, int) {
  if (cq->channel == nullptr) {
    return 0;  // no channel to tell: nothing to arm, as on a NIC
  }
  ContextState& state = state_of(cq->context);
  std::lock_guard lock(state.data);
  emu::shm::SubmitEntry arm{};
  arm.kind = static_cast<std::uint8_t>(emu::shm::SubmitKind::kArmCq);
  arm.qpn = reinterpret_cast<Cq*>(cq)->handle;
  arm.wr_id = reinterpret_cast<Cq*>(cq)->taken;
  submit(state, arm);
  state.channel.ring_doorbell_if_needed();
  return 0;
}

void cq_event(ibv_cq*) {}

void async_event(ibv_context*, ibv_async_event*) {}

void free_context(ibv_context* ibv) {
  auto* context =
      reinterpret_cast<Context*>(reinterpret_cast<char*>(ibv) - offsetof(Context, base.context));
  if (context->state->async_fd >= 0) {
    close(context->state->async_fd);
  }
  delete context->state;
  verbs_uninit_context(&context->base);
  free(context);
}

const verbs_context_ops kOps = [] {
  verbs_context_ops ops{};
  ops.alloc_pd = alloc_pd;
  ops.async_event = async_event;
  ops.cq_event = cq_event;
  ops.create_cq = create_cq;
  ops.create_qp = create_qp;
  ops.create_qp_ex = create_qp_ex;
  ops.dealloc_pd = dealloc_pd;
  ops.dereg_mr = dereg_mr;
  ops.destroy_cq = destroy_cq;
  ops.destroy_qp = destroy_qp;
  ops.free_context = free_context;
  ops.modify_qp = modify_qp;
  ops.poll_cq = poll_cq;
  ops.post_recv = post_recv;
  ops.post_send = post_send;
  ops.query_device_ex = query_device_ex;
  ops.query_port = query_port;
  ops.query_qp = query_qp;
  ops.reg_mr = reg_mr;
  ops.req_notify_cq = req_notify_cq;
  return ops;
}();

// libibverbs opened the device's character device as the command channel of a kernel driver.
// There is none: replace it with a read-only /dev/null, so that a verb libibverbs would send to
// the kernel (a completion channel) fails at once (EBADF) and an ioctl it probes with answers
// ENOTTY, which libibverbs takes as "no kernel ioctls" and reads sysfs instead.
void neuter_command_channel(int cmd_fd) {
  const int read_only = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (read_only >= 0) {
    dup3(read_only, cmd_fd, O_CLOEXEC);
    close(read_only);
  }
}

verbs_context* alloc_context(ibv_device* ibdev, int cmd_fd, void*) {
  auto* context = static_cast<Context*>(
      _verbs_init_and_alloc_context(ibdev, cmd_fd, sizeof(Context),
                                    reinterpret_cast<verbs_context*>(offsetof(Context, base)), 0));
  if (context == nullptr) {
    return nullptr;
  }
  neuter_command_channel(cmd_fd);
  auto* state = new (std::nothrow) ContextState;
  const auto& device = *reinterpret_cast<Device*>(ibdev);
  std::string why;
  int error = ENOMEM;
  if (state != nullptr) {
    error = device.region_path.empty()
                ? state->channel.open(device.socket_path, state->identity, why)
                : state->channel.open_region(device.region_path, state->identity, why);
  }
  if (error != 0) {
    // The program only learns that the device could not be opened; say why once.
    std::fprintf(stderr, "ernic: %s: %s\n", ibdev->name, why.c_str());
    delete state;
    verbs_uninit_context(&context->base);
    free(context);
    errno = error;
    return nullptr;
  }
  state->async_fd = eventfd(0, EFD_CLOEXEC);
  context->state = state;
  context->base.context.async_fd = state->async_fd;
  context->base.context.num_comp_vectors = 1;
  verbs_set_ops(&context->base, &kOps);
  return &context->base;
}

const verbs_device_ops kDeviceOps = {
    .name = "ernic",
    .match_min_abi_version = 1,
    .match_max_abi_version = 1,
    .match_table = nullptr,
    .static_providers = nullptr,
    .match_device = match_device,
    .alloc_context = alloc_context,
    .import_context = nullptr,
    .alloc_device = alloc_device,
    .uninit_device = uninit_device,
};

__attribute__((constructor)) void register_provider() {
  verbs_register_driver_34(&kDeviceOps);
}

}  // namespace

void debug(const char* format, ...) {
  if (!wants_debug()) {
    return;
  }
  va_list args;
  va_start(args, format);
  std::fputs("ernic: ", stderr);
  std::vfprintf(stderr, format, args);
  std::fputc('\n', stderr);
  va_end(args);
}

}  // namespace ernic::verbs
