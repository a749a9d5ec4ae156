#pragma once

#include "setup/setup_step.h"

// Every setup step, one file each; builtin_platform.cc lists them.
namespace ernic {

const SetupStep& memlock_step();
const SetupStep& rdma_device_step();
const SetupStep& gid_index_step();
const SetupStep& soft_roce_step();
const SetupStep& packages_step();
const SetupStep& sysctl_step();
const SetupStep& command_step();
const SetupStep& instance_device_step();

}  // namespace ernic
