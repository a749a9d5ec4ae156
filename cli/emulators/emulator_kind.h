#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "base/cleanup_stack.h"
#include "base/config_value.h"
#include "base/schema.h"
#include "benchmarks/benchmark.h"
#include "emulators/instance_manifest.h"
#include "history/history_record.h"
#include "hosts/host.h"

namespace ernic {

// Emulator instances a run started. Hosts that name an `instance` get that instance's facts
// (its front-end socket, GIDs, MAC), which benchmark modules turn into command lines.
class RunningEmulator {
 public:
  virtual ~RunningEmulator() = default;
  // Empty while every instance runs; otherwise which one died and its last log lines.
  virtual std::string check_alive() = 0;
  virtual int instance_count() const = 0;
  // Throws std::out_of_range for an instance that does not exist.
  virtual HostFacts facts_for(int instance) const = 0;
  // What the history record says about the instances.
  virtual nlohmann::json record() const = 0;
  // The instances as rocm-ernic's service layer lists them (instance_manifest.h).
  virtual InstanceManifest manifest() const = 0;
  // What each instance (by id) has moved so far, from its counters; empty when this kind cannot
  // tell. A point's traffic is the difference of two calls.
  virtual std::map<int, InstanceTraffic> traffic() const { return {}; }
  // Leaves the instances running after ernicctl exits (`ernicctl up`). False when this kind
  // cannot: its instances die with ernicctl.
  virtual bool detach() { return false; }
};

struct EmulatorContext {
  std::filesystem::path run_dir;
  std::string run_token;
  CleanupStack* cleanup = nullptr;
  // `ernicctl up`: the instances will be left running (RunningEmulator::detach()), so they must
  // not be tied to ernicctl's life.
  bool bring_up = false;
  // The scenario's hosts by name, for instances placed on them (EmulatorKind::placement_hosts
  // are created before start()); null for a host that does not exist (yet).
  std::function<Host*(const std::string&)> host;
  // Instances attached to a guest that reaches them through a guest region (a libvirt host with
  // `instance: N`): the embedded kind has each of them serve one.
  std::vector<int> guest_instances;
};

// One value of the scenario's `emulator.kind`: none, embedded (this repository's emulator),
// external (the rocm-ernic server).
class EmulatorKind {
 public:
  virtual ~EmulatorKind() = default;
  virtual std::string_view name() const = 0;
  virtual std::string_view description() const = 0;
  // Keys of the `emulator:` section besides `kind`.
  virtual const ObjectSchema& schema() const = 0;
  virtual int instance_count(const Config& config) const = 0;
  // Hosts of the scenario that run instances (`on: HOST`): the run creates them before it
  // starts the instances. Empty when every instance runs on this machine.
  virtual std::vector<std::string> placement_hosts(const Config& /*config*/) const { return {}; }
  // Whether the kind's instances serve guests through guest regions (embedded).
  virtual bool serves_guest_regions() const { return false; }
  // The host of the scenario instance `instance` runs on (`on: HOST`); "" for this machine.
  virtual std::string placed_on(const Config& /*config*/, int /*instance*/) const { return ""; }
  // Checks beyond the schema that need the scenario's host names (an `on:` naming no host),
  // located by the values' own locations.
  virtual void check(const Config& /*config*/, const std::vector<std::string>& /*host_names*/,
                     Diagnostics& /*out*/) const {}
  // Dry run: the command line of every instance start() would launch, derived from the same plan
  // start() carries out; values known only once instances run appear as <placeholders>.
  virtual std::vector<std::string> describe(const Config& config,
                                            const EmulatorContext& context) const = 0;
  // Dry run: the facts start()'s instance `instance` would give the hosts attached to it.
  virtual HostFacts planned_facts(const Config& /*config*/, const EmulatorContext& /*context*/,
                                  int /*instance*/) const {
    return {};
  }
  // Starts the instances and waits until they are ready; pushes their stop onto the cleanup
  // stack. Returns null for `none`.
  virtual std::unique_ptr<RunningEmulator> start(const Config& config,
                                                 EmulatorContext& context) = 0;
  // `ernicctl run --attach`: the instances `up` left (its manifest's `instances`), watched but
  // never stopped. By default they are watched by pid, log and stats file
  // (attached_instances.h).
  virtual std::unique_ptr<RunningEmulator> attach(const std::vector<ManifestInstance>& instances,
                                                  EmulatorContext& context);
};

}  // namespace ernic
