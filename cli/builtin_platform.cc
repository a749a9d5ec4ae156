#include "builtin_platform.h"

#include "benchmarks/registry.h"
#include "emulators/registry.h"
#include "hosts/libvirt/libvirt_provider.h"
#include "hosts/registry.h"
#include "hosts/ssh/ssh_provider.h"
#include "setup/steps.h"

namespace ernic {

Platform builtin_platform() {
  return Platform{
      .providers = {&local_provider(), &netns_provider(), &embedded_provider(),
                    &ssh_host_provider(), &libvirt_provider()},
      .emulator_kinds = {&no_emulator(), &embedded_emulator(), &external_emulator()},
      // The order a user usually lists them in: packages and kernel settings, then the device.
      .setup_steps = {&packages_step(), &sysctl_step(), &memlock_step(), &soft_roce_step(),
                      &rdma_device_step(), &gid_index_step(), &command_step(),
                      &instance_device_step()},
      .tools = builtin_tools(),
  };
}

}  // namespace ernic
