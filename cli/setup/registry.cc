#include "setup/setup_step.h"
#include "setup/steps.h"

namespace ernic {

const std::vector<const SetupStep*>& all_setup_steps() {
  // The order a user usually lists them in: packages and kernel settings, then the device.
  static const std::vector<const SetupStep*> steps = {
      &packages_step(),    &sysctl_step(),    &memlock_step(), &soft_roce_step(),
      &rdma_device_step(), &gid_index_step(), &command_step(),
  };
  return steps;
}

const SetupStep* find_setup_step(std::string_view kind) {
  for (const SetupStep* step : all_setup_steps()) {
    if (step->kind() == kind) {
      return step;
    }
  }
  return nullptr;
}

}  // namespace ernic
