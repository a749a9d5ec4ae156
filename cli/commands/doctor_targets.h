#pragma once

#include <string>
#include <vector>

#include "hosts/ssh/ssh_connection.h"

namespace ernic {

struct Scenario;

// The `ssh:` settings the command line gives every HOST of `ernicctl doctor HOST...`: the
// ssh provider's keys (docs/hosts-ssh.md); empty means the provider's default.
struct DoctorSshFlags {
  std::string user;
  std::string key;
  std::string known_hosts;
  std::string host_key_policy;
  std::string connect_timeout;
};

// A remote machine doctor checks: its name as given and how to log in.
struct DoctorTarget {
  std::string name;
  SshConnectOptions options;
};

// `[user@]host[:port]` (an IPv6 address in brackets: `[fe80::1]:22`) with the flags' settings,
// read by the ssh provider as a host entry of a scenario would be. Throws
// std::invalid_argument naming the HOST and what is wrong with it.
DoctorTarget doctor_target(const std::string& host, const DoctorSshFlags& flags);

// The machines a scenario reaches: its ssh hosts with their own settings, and the machines of
// its libvirt hosts' remote URIs (qemu+ssh://[user@]host[:port]/...) with the flags' settings,
// each machine once.
std::vector<DoctorTarget> doctor_targets_of(const Scenario& scenario, const DoctorSshFlags& flags);

}  // namespace ernic
