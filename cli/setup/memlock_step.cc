#include <fmt/format.h>

#include "hosts/ssh/ssh_host.h"
#include "setup/step_support.h"
#include "setup/steps.h"

namespace ernic {
namespace {

// The distro default (8 MiB) breaks a 4 MiB perftest run with a misleading "Couldn't create
// CQ"; these are the files rocm-ernic's guest setup writes.
constexpr const char* kLimitsFile = "/etc/security/limits.d/90-rdma-memlock.conf";
constexpr const char* kSystemdFile = "/etc/systemd/system.conf.d/90-rdma-memlock.conf";

// `limit` is what `ulimit -l` prints: "unlimited" or KiB.
std::string limit_of(const Config& config) {
  std::string limit = config.text("limit", "unlimited");
  if (limit != "unlimited" &&
      (limit.empty() || limit.find_first_not_of("0123456789") != std::string::npos)) {
    throw SetupError("memlock: limit must be unlimited or a number of KiB, found '" + limit + "'");
  }
  return limit;
}

std::string limits_file(const std::string& limit) {
  return fmt::format(
      "# Written by ernicctl (memlock step): RDMA needs to pin memory.\n"
      "* soft memlock {0}\n"
      "* hard memlock {0}\n"
      "root soft memlock {0}\n"
      "root hard memlock {0}\n",
      limit);
}

std::string systemd_value(const std::string& limit) {
  return limit == "unlimited" ? "infinity" : std::to_string(std::stoull(limit) * 1024);
}

std::string systemd_drop_in(const std::string& limit) {
  return fmt::format(
      "# Written by ernicctl (memlock step)\n"
      "[Manager]\n"
      "DefaultLimitMEMLOCK={}\n",
      systemd_value(limit));
}

class MemlockStep : public SetupStep {
 public:
  std::string_view kind() const override { return "memlock"; }
  std::string_view description() const override {
    return "Unlimited locked memory for RDMA: limits.d file, systemd drop-in and daemon "
           "re-exec, then checks that a new login session has ulimit -l unlimited";
  }
  const ObjectSchema& schema() const override {
    static const ObjectSchema schema = [] {
      FieldSchema limit =
          setup::field("limit", ValueKind::kString,
                       "Locked-memory limit as `ulimit -l` prints it: unlimited, or KiB");
      limit.default_text = "unlimited";
      return ObjectSchema{"Locked-memory limit of login sessions (RDMA pins memory)", {limit}};
    }();
    return schema;
  }

  std::vector<std::string> describe(const Config& config, const Host& host) const override {
    std::string limit = limit_of(config);
    return {
        fmt::format("write {} on {} (soft and hard memlock {} for * and root)", kLimitsFile,
                    host.name(), limit),
        fmt::format("if systemd runs on {}: write {} (DefaultLimitMEMLOCK={}) and run "
                    "systemctl daemon-reexec",
                    host.name(), kSystemdFile, systemd_value(limit)),
        fmt::format("verify: ulimit -l in a new session on {} is {}", host.name(), limit),
    };
  }

  void apply(const Config& config, Host& host, HostFacts& facts, OutputSink* log) const override {
    std::string limit = limit_of(config);
    install(host, kLimitsFile, limits_file(limit), log);
    bool systemd = setup::run_script(host, "test -d /run/systemd/system", {}, nullptr).ok();
    if (systemd) {
      if (install(host, kSystemdFile, systemd_drop_in(limit), log)) {
        setup::run_script_checked(host, kind(), "systemctl daemon-reexec",
                                  "systemctl daemon-reexec", {}, log);
      }
      CommandResult shown = setup::run_script_checked(
          host, kind(), "reading systemd's DefaultLimitMEMLOCK",
          "systemctl show --property=DefaultLimitMEMLOCK --value", {}, nullptr);
      if (setup::trim(shown.out) != systemd_value(limit)) {
        setup::fail(kind(), host,
                    fmt::format("systemd's DefaultLimitMEMLOCK is '{}' after daemon-reexec, "
                                "expected {}",
                                setup::trim(shown.out), systemd_value(limit)));
      }
    } else {
      setup::note(log, fmt::format("systemd is not running on {}: {} and daemon-reexec skipped",
                                   host.name(), kSystemdFile));
    }
    verify(host, limit, log);
    facts["memlock"] = limit;
  }

 private:
  // Writes `content` to `path` unless it is already there; returns whether it wrote.
  bool install(Host& host, const std::string& path, const std::string& content,
               OutputSink* log) const {
    CommandResult current = setup::run_script(host, "cat \"$1\" 2>/dev/null", {path}, nullptr);
    if (current.ok() && current.out == content) {
      setup::note(log, fmt::format("{} already in place on {}", path, host.name()));
      return false;
    }
    std::string directory = path.substr(0, path.rfind('/'));
    setup::run_script_checked(host, kind(), "creating " + directory, "mkdir -p \"$1\"", {directory},
                              log);
    try {
      host.upload(content, path, 0644);
    } catch (const std::exception& error) {
      setup::fail(kind(), host, fmt::format("cannot write {}: {}", path, error.what()));
    }
    setup::note(log, fmt::format("wrote {} on {}", path, host.name()));
    return true;
  }

  // limits.d applies at login (pam_limits), so the check needs a session opened after the
  // file was written. Hosts without logins (local, netns) run commands with ernicctl's own
  // limit, which is what they are checked against.
  void verify(Host& host, const std::string& limit, OutputSink* log) const {
    CommandSpec ulimit{{"/bin/sh", "-c", "ulimit -l"}, std::chrono::seconds(30), {}};
    CommandResult result;
    std::string where;
    if (auto* ssh = dynamic_cast<SshHost*>(&host)) {
      try {
        result = ssh->open_new_session()->run(ulimit);
      } catch (const std::exception& error) {
        setup::fail(kind(), host,
                    fmt::format("cannot open a new session to check: {}", error.what()));
      }
      where = "a new login session";
    } else {
      result = host.run(ulimit);
      where =
          "commands (they inherit ernicctl's own limit: start ernicctl with "
          "`ulimit -l unlimited`)";
    }
    std::string value = setup::trim(result.out);
    if (!result.ok() || value != limit) {
      setup::fail(kind(), host,
                  fmt::format("ulimit -l is '{}' for {} after writing {}, expected {}{}",
                              value.empty() ? result.describe() : value, where, kLimitsFile, limit,
                              dynamic_cast<SshHost*>(&host) != nullptr
                                  ? " (pam_limits must be enabled for sshd, UsePAM yes, and sshd "
                                    "allowed to raise limits: CAP_SYS_RESOURCE)"
                                  : ""));
    }
    setup::note(log, fmt::format("ulimit -l is {} for {} on {}", limit, where, host.name()));
  }
};

}  // namespace

const SetupStep& memlock_step() {
  static const MemlockStep step;
  return step;
}

}  // namespace ernic
