#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace ernic {

class Host;

// What a command run by a probe printed and how it ended.
struct ProbeOutput {
  bool ok = false;      // exit status 0
  std::string output;   // stdout then stderr
  std::string failure;  // "exit status 1", "timed out after 30.0 s"; empty when ok
};

// What the libvirt daemon of a machine answered: its version, or why it did not answer.
struct LibvirtAnswer {
  bool answers = false;
  std::string version;  // "9.0.0"
  std::string error;
  std::vector<std::string> started;  // daemons started to get the answer (this machine only)
};

// Where `ernicctl doctor` looks: every check reads the machine only through this, so one
// definition of a check serves this machine and a remote one alike.
class DoctorProbe {
 public:
  virtual ~DoctorProbe() = default;
  // Whether this is the machine ernicctl runs on: fixes and starting daemons happen only here.
  virtual bool is_local() const = 0;
  // The file's contents; nullopt when it cannot be read.
  virtual std::optional<std::string> read_file(const std::string& path) = 0;
  virtual ProbeOutput run(const std::vector<std::string>& argv, std::chrono::seconds timeout) = 0;
  virtual bool is_directory(const std::string& path) = 0;
  // Whether the device node opens for reading and writing (/dev/kvm, /dev/net/tun).
  virtual bool opens_read_write(const std::string& path) = 0;
  virtual bool has_program(const std::string& program) = 0;
  // qemu:///system's answer; `start_daemons` starts virtlogd and libvirtd first when they are
  // not running (this machine only).
  virtual LibvirtAnswer ask_libvirt(bool start_daemons) = 0;
  // Fixes (this machine only; a remote probe throws std::logic_error).
  virtual void write_file(const std::string& path, const std::string& content) = 0;
  virtual void create_directories(const std::string& path) = 0;
};

// This machine: reads files and devices directly, runs programs as child processes.
class LocalDoctorProbe : public DoctorProbe {
 public:
  bool is_local() const override { return true; }
  std::optional<std::string> read_file(const std::string& path) override;
  ProbeOutput run(const std::vector<std::string>& argv, std::chrono::seconds timeout) override;
  bool is_directory(const std::string& path) override;
  bool opens_read_write(const std::string& path) override;
  bool has_program(const std::string& program) override;
  LibvirtAnswer ask_libvirt(bool start_daemons) override;
  void write_file(const std::string& path, const std::string& content) override;
  void create_directories(const std::string& path) override;
};

// A machine reached through a Host (SSH): every look is a command run there, so what the
// checks see is what a login session on that machine sees (its capabilities, its limits).
class HostDoctorProbe : public DoctorProbe {
 public:
  explicit HostDoctorProbe(Host& host) : host_(host) {}
  bool is_local() const override { return false; }
  std::optional<std::string> read_file(const std::string& path) override;
  ProbeOutput run(const std::vector<std::string>& argv, std::chrono::seconds timeout) override;
  bool is_directory(const std::string& path) override;
  bool opens_read_write(const std::string& path) override;
  bool has_program(const std::string& program) override;
  // Through virsh on the machine: libvirt's own remote transport would log in a second time
  // with OpenSSH's settings instead of the ones given here.
  LibvirtAnswer ask_libvirt(bool start_daemons) override;
  void write_file(const std::string& path, const std::string& content) override;
  void create_directories(const std::string& path) override;

 private:
  Host& host_;
};

// The daemon version in `virsh version --daemon` output ("Running against daemon: 9.0.0");
// empty when absent.
std::string parse_virsh_daemon_version(const std::string& output);

}  // namespace ernic
