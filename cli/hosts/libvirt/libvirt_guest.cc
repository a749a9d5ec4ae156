#include "hosts/libvirt/libvirt_guest.h"

#include <fmt/format.h>
#include <libvirt/libvirt.h>

#include <stdexcept>

#include "hosts/libvirt/libvirt_connection.h"
#include "hosts/libvirt/libvirt_resources.h"
#include "hosts/ssh/ssh_host.h"
#include "hosts/ssh/ssh_login.h"

namespace ernic {

SshConnectOptions guest_ssh_options(const GuestSshTarget& target) {
  SshConnectOptions options;
  options.label = target.name;
  options.target.host = target.address;
  options.target.port = target.port;
  options.target.user = target.user;
  options.target.key = target.private_key;
  // The image's host keys, written by create(): strict, never trust on first use.
  options.known_hosts = target.known_hosts;
  options.host_key_policy = HostKeyPolicy::kStrict;
  if (target.jump) {
    options.jump = target.jump->host;
    // An empty one must not fall back to the guests' file: the jump's key is not in it.
    options.jump_known_hosts = target.jump->known_hosts.empty() ? ssh_login::default_known_hosts()
                                                                : target.jump->known_hosts;
  }
  // Key exchange in a TCG guest on a busy machine takes seconds.
  options.connect_timeout = std::chrono::seconds(60);
  options.alive_timeout = std::chrono::seconds(30);
  return options;
}

SshHostFactory default_ssh_host_factory() {
  return [](const GuestSshTarget& target) -> std::unique_ptr<Host> {
    return std::make_unique<SshHost>(target.name, target.address, guest_ssh_options(target));
  };
}

LibvirtGuest::LibvirtGuest(std::shared_ptr<LibvirtConnection> connection, std::string domain_name,
                           GuestSshTarget target, std::unique_ptr<Host> transport,
                           std::map<std::string, std::string> facts, double t_init_s)
    : connection_(std::move(connection)),
      domain_name_(std::move(domain_name)),
      target_(std::move(target)),
      transport_(std::move(transport)),
      facts_(std::move(facts)),
      t_init_s_(t_init_s) {}

std::string LibvirtGuest::describe() const {
  return fmt::format("{} (libvirt domain {}, {}, {})", target_.name, domain_name_, target_.address,
                     facts_.count("accelerator") ? facts_.at("accelerator") : "?");
}

Host& LibvirtGuest::transport() {
  if (!transport_) {
    throw std::runtime_error(fmt::format(
        "{}: no SSH transport to run commands with (the ssh host provider is not built in)",
        describe()));
  }
  return *transport_;
}

std::unique_ptr<RunningCommand> LibvirtGuest::start(const CommandSpec& spec, OutputSink* sink) {
  return transport().start(spec, sink);
}

void LibvirtGuest::upload(std::string_view content, const std::string& path, int mode) {
  transport().upload(content, path, mode);
}

bool LibvirtGuest::is_listening(std::uint16_t port) {
  return transport().is_listening(port);
}

bool LibvirtGuest::has_program(const std::string& program) {
  return transport().has_program(program);
}

std::string LibvirtGuest::check_alive() {
  int state = domain_state(connection_->get(), domain_name_);
  if (state < 0) {
    return fmt::format("libvirt domain {} no longer exists", domain_name_);
  }
  if (state != VIR_DOMAIN_RUNNING) {
    return fmt::format("libvirt domain {} is {}", domain_name_, domain_state_name(state));
  }
  return transport_ ? transport_->check_alive() : std::string();
}

}  // namespace ernic
