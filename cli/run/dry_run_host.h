#pragma once

#include <stdexcept>

#include "hosts/host.h"

namespace ernic {

// A host that only has a name and an address: lets benchmark modules resolve their command
// lines for the dry run without anything existing.
class DryRunHost final : public Host {
 public:
  DryRunHost(std::string name, std::string address)
      : name_(std::move(name)), address_(std::move(address)) {}
  const std::string& name() const override { return name_; }
  std::string address() const override {
    return address_.empty() ? "<" + name_ + " address>" : address_;
  }
  std::string describe() const override { return name_; }
  std::unique_ptr<RunningCommand> start(const CommandSpec&, OutputSink*) override { refuse(); }
  void upload(std::string_view, const std::string&, int) override { refuse(); }
  bool is_listening(std::uint16_t) override { refuse(); }
  std::string check_alive() override { return ""; }
  bool has_program(const std::string&) override { return true; }

 private:
  [[noreturn]] static void refuse() { throw std::logic_error("a dry run starts nothing"); }
  std::string name_;
  std::string address_;
};

}  // namespace ernic
