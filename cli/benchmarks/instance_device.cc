#include "benchmarks/instance_device.h"

#include <fmt/format.h>

#include <stdexcept>

#include "frontend/verbs_environment.h"

namespace ernic {
bool attached_to_instance(const HostFacts& facts) {
  return !host_fact(facts, "perf_socket").empty() && !host_fact(facts, "ernicctl").empty();
}

bool has_instance_device(const HostFacts& facts) {
  return attached_to_instance(facts) || !host_fact(facts, "verbs_device").empty();
}

std::string use_instance_device(const HostFacts& facts, CommandSpec& spec) {
  const std::string sysfs = host_fact(facts, "verbs_sysfs");
  const std::string device = host_fact(facts, "verbs_device");
  const std::string library_dir = host_fact(facts, "verbs_library_dir");
  if (sysfs.empty() || device.empty()) {
    throw std::invalid_argument(fmt::format(
        "emulator instance {} describes no verbs device (an `ernicctl up` from before verbs "
        "devices? bring it up again), so verbs programs cannot use it",
        host_fact(facts, "emulator_instance")));
  }
  if (library_dir.empty()) {
    throw std::invalid_argument(fmt::format(
        "emulator instance {} runs `{}` (found in PATH, or a copy without the verbs "
        "provider), so no verbs provider (lib/ernicctl beside it) is known: give the instance's "
        "`ernicctl:` as the absolute path of an installed or built ernicctl, or measure with "
        "ernicctl's load generator (`program: load-generator`)",
        host_fact(facts, "emulator_instance"), host_fact(facts, "ernicctl")));
  }
  spec.env = emu::verbs_environment(sysfs, library_dir).variables();
  return device;
}

std::string gid_index_for(const HostFacts& facts, const PointParams& params) {
  if (std::string learned = host_fact(facts, "gid_index"); !learned.empty()) {
    return learned;
  }
  if (params.has("gid_index")) {
    return params.text("gid_index");
  }
  return has_instance_device(facts) ? "0" : "";
}

}  // namespace ernic
