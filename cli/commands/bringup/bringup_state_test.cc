// The files `ernicctl up` leaves where rocm-ernic's helper looks, and `down` removing them.
#include "commands/bringup/bringup_state.h"

#include <fmt/format.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>

#include "scratch_dir.h"

namespace ernic {
namespace {
namespace fs = std::filesystem;

std::string read(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Sets (or, with nullptr, unsets) an environment variable for one test, then restores it.
class ScopedEnvironment {
 public:
  ScopedEnvironment(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) {
      old_ = old;
    }
    value ? ::setenv(name, value, 1) : ::unsetenv(name);
  }
  ~ScopedEnvironment() { old_ ? ::setenv(name_, old_->c_str(), 1) : ::unsetenv(name_); }
  ScopedEnvironment(const ScopedEnvironment&) = delete;
  ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

testing::ScratchDir fresh_dir(const std::string& name) {
  return testing::ScratchDir("ernic-" + name);
}

TEST_CASE("instance logs go to --log-dir, else $ERNIC_LOG_DIR, else STATE_DIR/logs", "[bringup]") {
  StateFlags flags;
  flags.state_dir = "/srv/state";
  {
    ScopedEnvironment unset("ERNIC_LOG_DIR", nullptr);
    CHECK(instance_log_dir(flags, "") == fs::path("/srv/state/logs"));
    CHECK(instance_log_dir(flags, "/given") == fs::path("/given"));
  }
  {
    ScopedEnvironment empty("ERNIC_LOG_DIR", "");
    CHECK(instance_log_dir(flags, "") == fs::path("/srv/state/logs"));
  }
  ScopedEnvironment set("ERNIC_LOG_DIR", "/var/log/rocm-ernic");
  CHECK(instance_log_dir(flags, "") == fs::path("/var/log/rocm-ernic"));
  CHECK(instance_log_dir(flags, "/given") == fs::path("/given"));
}

TEST_CASE("each instance's live stats and log are linked as ID.stats and ID.log, and removed",
          "[bringup]") {
  auto dir = fresh_dir("bringup-links");
  fs::path sockets = dir / "sockets";
  fs::create_directories(sockets);
  std::ofstream(sockets / "instance1.stats") << "mesh_peers : 1\n";
  std::ofstream(sockets / "instance1.log") << "manager: device realized\n";
  std::ofstream(sockets / "instance2.stats") << "mesh_peers : 1\nqps : 0\n";
  std::ofstream(sockets / "instance2.log") << "worker: joined\n";
  std::vector<ManifestInstance> instances;
  for (int id : {1, 2}) {
    ManifestInstance instance;
    instance.id = id;
    instance.stats = (sockets / fmt::format("instance{}.stats", id)).string();
    instance.log = (sockets / fmt::format("instance{}.log", id)).string();
    instances.push_back(instance);
  }
  fs::path state_dir = dir / "state";
  fs::path log_dir = state_dir / "logs";
  fs::create_directories(state_dir);
  std::ofstream(state_dir / "1.stats") << "stale, from a killed up\n";

  InstanceLinks linked = link_instance_files(instances, state_dir, log_dir);
  CHECK(linked.problems.empty());
  CHECK(linked.links.size() == 4);
  CHECK(read(state_dir / "1.stats") == "mesh_peers : 1\n");
  CHECK(read(state_dir / "2.stats") == "mesh_peers : 1\nqps : 0\n");
  CHECK(read(log_dir / "1.log") == "manager: device realized\n");
  CHECK(read(log_dir / "2.log") == "worker: joined\n");
  // Live: what the instance writes later is what the helper reads.
  std::ofstream(sockets / "instance1.stats") << "mesh_peers : 1\nqps : 3\n";
  CHECK(read(state_dir / "1.stats") == "mesh_peers : 1\nqps : 3\n");

  UpState state;
  state.instance_files = linked.links;
  state.log_dir = log_dir.string();
  state.log_dir_created = true;
  remove_instance_files(state);
  CHECK_FALSE(fs::exists(fs::symlink_status(state_dir / "1.stats")));
  CHECK_FALSE(fs::exists(fs::symlink_status(state_dir / "2.stats")));
  CHECK_FALSE(fs::exists(log_dir));
  // The live files belong to the instances: only the links go.
  CHECK(fs::exists(sockets / "instance1.stats"));
  CHECK(fs::exists(sockets / "instance1.log"));
}

TEST_CASE("a log folder `up` did not create is kept by down, and a missing file is reported",
          "[bringup]") {
  auto dir = fresh_dir("bringup-keep");
  fs::path log_dir = dir / "existing-logs";
  fs::create_directories(log_dir);
  std::ofstream(dir / "instance1.log") << "log\n";
  ManifestInstance log_only;
  log_only.id = 1;
  log_only.log = (dir / "instance1.log").string();
  const std::vector<ManifestInstance> instances{log_only};
  fs::create_directories(dir / "state-is-a-file-parent");
  std::ofstream(dir / "state-is-a-file-parent" / "state") << "not a folder";
  InstanceLinks linked =
      link_instance_files(instances, dir / "state-is-a-file-parent" / "state", log_dir);
  CHECK(linked.links.size() == 1);  // no stats file named: only the log is linked
  CHECK(linked.problems.empty());

  ManifestInstance stats_only;
  stats_only.id = 1;
  stats_only.stats = (dir / "instance1.stats").string();
  const std::vector<ManifestInstance> with_stats{stats_only};
  InstanceLinks failed =
      link_instance_files(with_stats, dir / "state-is-a-file-parent" / "state", log_dir);
  CHECK(failed.links.empty());
  REQUIRE(failed.problems.size() == 1);
  CHECK_THAT(failed.problems[0], Catch::Contains("cannot link") && Catch::Contains("1.stats"));

  UpState kept_folder;
  kept_folder.instance_files = linked.links;
  kept_folder.log_dir = log_dir.string();
  kept_folder.log_dir_created = false;
  remove_instance_files(kept_folder);
  CHECK_FALSE(fs::exists(fs::symlink_status(log_dir / "1.log")));
  CHECK(fs::exists(log_dir));
}

}  // namespace
}  // namespace ernic
