// `ernicctl ssh HOST [-- COMMAND]`: a shell (or one command) on a host `up` started: a guest
// over ssh with its image's key and host keys, a namespace host by entering the namespace.
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "commands/bringup/bringup_state.h"
#include "hosts/ssh/ssh_jump.h"

namespace ernic {
namespace {

// A remote libvirt host's guest is reached through the jump host its run used, that host's key
// verified as strictly as the guest's.
std::vector<std::string> jump_options(const UpHost& host) {
  if (host.fact("ssh_jump").empty()) {
    return {};
  }
  SshEndpoint jump = parse_ssh_destination(host.fact("ssh_jump"));
  std::string proxy = fmt::format(
      "ssh -o BatchMode=yes -o StrictHostKeyChecking=yes -o GlobalKnownHostsFile=/dev/null -p {} "
      "-l {} -W %h:%p",
      jump.port, shell_quote(jump.user.empty() ? ssh_login::local_user_name() : jump.user));
  for (const auto& [fact, option] : {std::pair{"ssh_jump_key", "-i "},
                                     std::pair{"ssh_jump_known_hosts", "-o UserKnownHostsFile="}}) {
    if (!host.fact(fact).empty()) {
      proxy += fmt::format(" {}{}", option, shell_quote(host.fact(fact)));
    }
  }
  return {"-o", "ProxyCommand=" + proxy + " " + shell_quote(jump.host)};
}

// The command line that logs in to `host`; empty when it is nothing to log in to.
std::vector<std::string> login_command(const UpHost& host) {
  if (host.facts.contains("netns")) {
    return {"ip", "netns", "exec", host.fact("netns")};
  }
  if (host.facts.contains("ssh_key")) {
    std::vector<std::string> via = jump_options(host);
    std::vector<std::string> argv{"ssh",
                                  "-i",
                                  host.fact("ssh_key"),
                                  "-o",
                                  "UserKnownHostsFile=" + host.fact("ssh_known_hosts"),
                                  "-o",
                                  "GlobalKnownHostsFile=/dev/null",
                                  "-o",
                                  "StrictHostKeyChecking=yes",
                                  "-l",
                                  host.fact("ssh_user")};
    argv.insert(argv.end(), via.begin(), via.end());
    argv.push_back(host.address);
    return argv;
  }
  return {};
}

int ssh(const StateFlags& flags, const std::string& name, const std::vector<std::string>& command) {
  auto state = read_state_or_say(flags);
  if (!state) {
    return kExitBadInput;
  }
  if (const UpHost* host = state->find_host(name)) {
    std::vector<std::string> argv = login_command(*host);
    if (argv.empty()) {
      std::cerr << fmt::format("{} is a {} host: nothing to log in to\n", name, host->provider);
      return kExitBadInput;
    }
    if (argv.front() == "ip" && command.empty()) {
      const char* shell = std::getenv("SHELL");
      argv.push_back(shell != nullptr && *shell != '\0' ? shell : "/bin/sh");
    }
    argv.insert(argv.end(), command.begin(), command.end());
    std::vector<char*> raw;
    for (auto& word : argv) {
      raw.push_back(word.data());
    }
    raw.push_back(nullptr);
    std::cout.flush();
    ::execvp(raw[0], raw.data());
    std::cerr << fmt::format("cannot run {}: {}\n", argv[0], std::strerror(errno));
    return kExitFailed;
  }
  std::cerr << fmt::format("no host {} in run {}\n", name, state->run_token);
  return kExitBadInput;
}

}  // namespace

void register_ssh_command(CLI::App& app, CommandContext& context) {
  auto flags = std::make_shared<StateFlags>();
  auto host_name = std::make_shared<std::string>();
  auto command = std::make_shared<std::vector<std::string>>();
  CLI::App* ssh_command = app.add_subcommand(
      "ssh",
      "Open a shell on a host `up` started (guests: ssh with the image's key and host "
      "keys; namespaces: a shell inside)");
  ssh_command->add_option("host", *host_name, "Host name from the scenario")->required();
  ssh_command->add_option("command", *command, "A command to run instead of a shell (after --)");
  add_state_option(ssh_command, *flags);
  ssh_command->callback([flags, host_name, command, &context] {
    run_guarded(context, [&] { return ssh(*flags, *host_name, *command); });
  });
}

}  // namespace ernic
