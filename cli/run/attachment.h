#pragma once

#include <string>
#include <vector>

#include "hosts/provider.h"
#include "run/up_state.h"
#include "scenario/scenario.h"

namespace ernic {

// What `ernicctl up` left running, as `ernicctl run --attach` finds it in the state directory:
// the hosts (with the facts their Hosts gave and setup learned) and the emulator instances.
// An attached run creates none of it and tears none of it down.
struct Attachment {
  std::string scenario_name;
  std::string up_run_dir;     // the up run's directory; its record holds the hosts' T_init
  std::string up_run_token;   // names the up run's namespaces, domains and sockets
  std::string up_since;       // ISO 8601; empty in states written before it was recorded
  std::string emulator_kind;  // empty in states written before it was recorded
  std::vector<std::pair<std::string, AttachedHost>> hosts;  // provider, host
  std::vector<ManifestInstance> instances;                  // the manifest's instances

  const AttachedHost* find_host(const std::string& name, std::string* provider = nullptr) const;
};

// What the state `up` wrote (up.json) says is up. Throws std::runtime_error naming what is
// missing.
Attachment attachment_from_state(const UpState& state);

// Why `scenario` cannot run against `attachment`: a host it names that is not up, or is up
// under another provider, or another emulator kind. Empty when it can.
std::string attachment_mismatch(const Scenario& scenario, const Attachment& attachment);

}  // namespace ernic
