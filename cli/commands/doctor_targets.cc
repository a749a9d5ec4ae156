#include "commands/doctor_targets.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <stdexcept>

#include "base/config_value.h"
#include "base/schema.h"
#include "hosts/ssh/ssh_provider.h"
#include "scenario/scenario.h"

namespace ernic {
namespace {

struct Login {
  std::string user;
  std::string host;
  std::string port;  // empty: the default
};

// `[user@]host[:port]`.
Login split_login(const std::string& text) {
  Login login;
  std::string rest = text;
  if (auto at = rest.rfind('@'); at != std::string::npos) {
    login.user = rest.substr(0, at);
    rest = rest.substr(at + 1);
  }
  if (!rest.empty() && rest.front() == '[') {
    auto close = rest.find(']');
    if (close == std::string::npos) {
      throw std::invalid_argument(fmt::format("{}: '[' without ']'", text));
    }
    login.host = rest.substr(1, close - 1);
    rest = rest.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') {
      throw std::invalid_argument(fmt::format("{}: expected :PORT after ']'", text));
    }
    login.port = rest.empty() ? "" : rest.substr(1);
  } else if (auto colon = rest.find(':'); colon != std::string::npos) {
    if (rest.find(':', colon + 1) != std::string::npos) {
      throw std::invalid_argument(
          fmt::format("{}: an IPv6 address goes in brackets ([ADDRESS]:PORT)", text));
    }
    login.host = rest.substr(0, colon);
    login.port = rest.substr(colon + 1);
  } else {
    login.host = rest;
  }
  if (login.host.empty()) {
    throw std::invalid_argument(fmt::format("{}: no host name", text));
  }
  return login;
}

// The host entry a scenario would hold for this login, read by the ssh provider itself.
DoctorTarget target_of(const std::string& name, const Login& login, const DoctorSshFlags& flags) {
  YAML::Node ssh(YAML::NodeType::Map);
  ssh["host"] = login.host;
  if (!login.port.empty()) {
    int port = 0;
    auto [end, error] =
        std::from_chars(login.port.data(), login.port.data() + login.port.size(), port);
    if (error != std::errc() || end != login.port.data() + login.port.size()) {
      throw std::invalid_argument(fmt::format("{}: port '{}' is not a number", name, login.port));
    }
    ssh["port"] = port;
  }
  auto set = [&](const char* key, const std::string& value) {
    if (!value.empty()) {
      ssh[key] = value;
    }
  };
  set("user", login.user.empty() ? flags.user : login.user);
  set("key", flags.key);
  set("known_hosts", flags.known_hosts);
  set("host_key_policy", flags.host_key_policy);
  set("connect_timeout", flags.connect_timeout);
  YAML::Node entry(YAML::NodeType::Map);
  entry["ssh"] = ssh;
  const ObjectSchema& schema = ssh_host_provider().host_schema();
  Diagnostics problems;
  validate(entry, schema, "command line", name, problems);
  if (!problems.empty()) {
    throw std::invalid_argument(
        fmt::format("{}: {}", problems.front().path, problems.front().message));
  }
  HostSpec spec;
  spec.name = name;
  spec.provider = "ssh";
  spec.config = make_config(entry, schema, "command line", name);
  try {
    return {name, ssh_options_from_spec(spec)};
  } catch (const SshError& error) {
    throw std::invalid_argument(error.what());
  }
}

// The `[user@]host[:port]` of a qemu+ssh:// (or +libssh, +libssh2) URI; empty for a local one
// or another transport.
std::string remote_login_of(const std::string& uri) {
  auto scheme_end = uri.find("://");
  if (scheme_end == std::string::npos) {
    return "";
  }
  std::string scheme = uri.substr(0, scheme_end);
  bool over_ssh =
      scheme.find("+ssh") != std::string::npos || scheme.find("+libssh") != std::string::npos;
  if (!over_ssh) {
    return "";
  }
  std::string authority = uri.substr(scheme_end + 3);
  return authority.substr(0, authority.find_first_of("/?"));
}

}  // namespace

DoctorTarget doctor_target(const std::string& host, const DoctorSshFlags& flags) {
  return target_of(host, split_login(host), flags);
}

std::vector<DoctorTarget> doctor_targets_of(const Scenario& scenario, const DoctorSshFlags& flags) {
  std::vector<DoctorTarget> targets;
  auto add = [&](DoctorTarget target) {
    bool seen = std::any_of(targets.begin(), targets.end(), [&](const DoctorTarget& known) {
      return known.options.target.display() == target.options.target.display();
    });
    if (!seen) {
      targets.push_back(std::move(target));
    }
  };
  for (const HostSpec& spec : scenario.hosts) {
    if (spec.provider == "ssh") {
      add({spec.name, ssh_options_from_spec(spec)});
    } else if (spec.provider == "libvirt") {
      std::string login = remote_login_of(spec.config.object("libvirt").text("uri", ""));
      if (!login.empty()) {
        add(doctor_target(login, flags));
      }
    }
  }
  return targets;
}

}  // namespace ernic
