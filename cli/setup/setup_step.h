#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "base/config_value.h"
#include "base/schema.h"
#include "benchmarks/benchmark.h"
#include "hosts/host.h"

namespace ernic {

// A setup step failed or its verification did not hold. The message names the host and says
// what was found, e.g. "no RDMA device matches 1dd8:1002:1dd8:5400 on guest1; found: rxe0
// (0000:0000:0000:0000)".
class SetupError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One kind of entry of a scenario's `setup:` list, e.g. `{step: sysctl, hosts: [a], values:
// {...}}`. Steps are idempotent and verify their effect after applying it.
class SetupStep {
 public:
  virtual ~SetupStep() = default;

  virtual std::string_view kind() const = 0;
  virtual std::string_view description() const = 0;
  // Keys the step takes besides `step` and `hosts`.
  virtual const ObjectSchema& schema() const = 0;
  virtual std::vector<Benchmark::Program> programs() const { return {}; }
  // Names of the facts apply() records, which benchmark command lines use (the dry run shows
  // them as <name>).
  virtual std::vector<std::string> recorded_facts() const { return {}; }
  // What the step will do on `host`, for the dry run: one line per action, commands resolved.
  virtual std::vector<std::string> describe(const Config& config, const Host& host) const = 0;
  // Applies and verifies the step; records what it learned (e.g. "rdma_device", "gid_index")
  // in `facts`. Throws SetupError.
  virtual void apply(const Config& config, Host& host, HostFacts& facts, OutputSink* log) const = 0;
};

}  // namespace ernic
