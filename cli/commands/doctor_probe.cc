#include "commands/doctor_probe.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "base/durable_file.h"
#include "base/local_process.h"
#include "benchmarks/tool_text.h"
#include "hosts/host.h"
#include "hosts/libvirt/libvirt_connection.h"

namespace ernic {
namespace fs = std::filesystem;
namespace {

constexpr std::chrono::seconds kLookTimeout{15};
constexpr std::chrono::seconds kLibvirtStartTimeout{60};

[[noreturn]] void refuse_remote_fix(const std::string& what) {
  throw std::logic_error("doctor applies fixes only on this machine, not " + what);
}

}  // namespace

std::optional<std::string> LocalDoctorProbe::read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return std::nullopt;
  }
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

ProbeOutput LocalDoctorProbe::run(const std::vector<std::string>& argv,
                                  std::chrono::seconds timeout) {
  LocalProcessOptions options;
  options.timeout = timeout;
  auto result = run_local(argv, options);
  return {result.ok(), result.output, result.ok() ? "" : result.describe()};
}

bool LocalDoctorProbe::is_directory(const std::string& path) {
  std::error_code ignored;
  return fs::is_directory(path, ignored);
}

bool LocalDoctorProbe::opens_read_write(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    return false;
  }
  ::close(fd);
  return true;
}

bool LocalDoctorProbe::has_program(const std::string& program) {
  return local_program_exists(program);
}

LibvirtAnswer LocalDoctorProbe::ask_libvirt(bool start_daemons) {
  LibvirtAnswer answer;
  try {
    if (start_daemons) {
      LibvirtDaemons daemons;
      daemons.ensure_running(kLibvirtStartTimeout);
      answer.started = daemons.started();
    }
    LibvirtConnection connection("qemu:///system");
    unsigned long version = 0;
    virConnectGetLibVersion(connection.get(), &version);
    answer.answers = true;
    answer.version =
        fmt::format("{}.{}.{}", version / 1000000, version / 1000 % 1000, version % 1000);
  } catch (const std::exception& error) {
    answer.error = error.what();
  }
  return answer;
}

void LocalDoctorProbe::write_file(const std::string& path, const std::string& content) {
  write_file_durably(path, content, {.durability = Durability::kDerived});
}

void LocalDoctorProbe::create_directories(const std::string& path) {
  std::error_code ignored;
  fs::create_directories(path, ignored);
}

std::optional<std::string> HostDoctorProbe::read_file(const std::string& path) {
  auto result = host_.run(CommandSpec{{"cat", "--", path}, kLookTimeout, {}});
  if (!result.ok()) {
    return std::nullopt;
  }
  return result.out;
}

ProbeOutput HostDoctorProbe::run(const std::vector<std::string>& argv,
                                 std::chrono::seconds timeout) {
  auto result = host_.run(CommandSpec{argv, timeout, {}});
  return {result.ok(), result.output(), result.ok() ? "" : result.describe()};
}

bool HostDoctorProbe::is_directory(const std::string& path) {
  return host_.run(CommandSpec{{"test", "-d", path}, kLookTimeout, {}}).ok();
}

bool HostDoctorProbe::opens_read_write(const std::string& path) {
  // `<>` opens O_RDWR (with O_CREAT, harmless once `test -c` saw a device node there).
  return host_
      .run(CommandSpec{
          {"sh", "-c", "test -c \"$1\" && exec 3<>\"$1\"", "sh", path}, kLookTimeout, {}})
      .ok();
}

bool HostDoctorProbe::has_program(const std::string& program) {
  return host_.has_program(program);
}

LibvirtAnswer HostDoctorProbe::ask_libvirt(bool /*start_daemons*/) {
  LibvirtAnswer answer;
  if (!host_.has_program("virsh")) {
    answer.error = "virsh is not installed there (apt-get install libvirt-clients)";
    return answer;
  }
  auto result = run({"virsh", "-c", "qemu:///system", "version", "--daemon"}, kLookTimeout);
  answer.version = parse_virsh_daemon_version(result.output);
  answer.answers = result.ok && !answer.version.empty();
  if (!answer.answers) {
    // One line, as the check's detail is printed: virsh says each error on a line of its own.
    std::vector<std::string_view> lines;
    for (auto line : tool_text::split_lines(result.output)) {
      if (!tool_text::trim(line).empty()) {
        lines.push_back(tool_text::trim(line));
      }
    }
    answer.error =
        fmt::format("`virsh -c qemu:///system version --daemon` failed ({}): {}",
                    result.ok ? "no daemon version" : result.failure, fmt::join(lines, "; "));
  }
  return answer;
}

void HostDoctorProbe::write_file(const std::string& path, const std::string& /*content*/) {
  refuse_remote_fix(path + " on " + host_.name());
}

void HostDoctorProbe::create_directories(const std::string& path) {
  refuse_remote_fix(path + " on " + host_.name());
}

std::string parse_virsh_daemon_version(const std::string& output) {
  static const std::regex kDaemon{R"(Running against daemon:\s*([0-9][0-9.]*))"};
  std::smatch match;
  if (std::regex_search(output, match, kDaemon)) {
    return match[1].str();
  }
  return "";
}

}  // namespace ernic
