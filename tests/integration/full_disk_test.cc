// `ernicctl run` when a disk is full, on a small tmpfs this test mounts, fills and unmounts: the
// history is never torn, the record is saved wherever there is room, the exit status says when
// it is not in the history, and `ernicctl history append` adds it later. (The same guarantees
// without a mount, by a file size limit: cli/history/history_file_test.cc and
// base/durable_file_test.cc.)
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mount.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ernicctl_runner.h"

using Catch::Matchers::Contains;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string kIperf3Scenario = std::string(ERNIC_SOURCE_DIR) + "/scenarios/netns-iperf3.yaml";

// A 512 KiB tmpfs mounted on `dir` for as long as this lives.
class SmallTmpfs {
 public:
  explicit SmallTmpfs(fs::path dir) : dir_(std::move(dir)) {
    fs::create_directories(dir_);
    if (::mount("tmpfs", dir_.c_str(), "tmpfs", 0, "size=512k") != 0) {
      error_ = std::strerror(errno);
      return;
    }
    mounted_ = true;
  }
  ~SmallTmpfs() {
    if (mounted_) {
      ::umount2(dir_.c_str(), MNT_DETACH);
    }
  }
  SmallTmpfs(const SmallTmpfs&) = delete;
  SmallTmpfs& operator=(const SmallTmpfs&) = delete;

  bool mounted() const { return mounted_; }
  const std::string& error() const { return error_; }

  // Takes every free block: the next write that needs a new block fails with ENOSPC.
  void fill() {
    int fd = ::open((dir_ / "filler").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    REQUIRE(fd >= 0);
    const std::string block(4096, 'f');
    while (::write(fd, block.data(), block.size()) > 0) {
    }
    CHECK(errno == ENOSPC);
    ::close(fd);
  }
  void make_room() { fs::remove(dir_ / "filler"); }

 private:
  fs::path dir_;
  bool mounted_ = false;
  std::string error_;
};

std::vector<std::string> quick_run(const fs::path& runs, const fs::path& history) {
  return {"run",        kIperf3Scenario,
          "--runs-dir", runs.string(),
          "--set",      "history.path=" + history.string(),
          "--set",      "benchmarks.tcp.params.duration=1s",
          "--set",      "benchmarks.udp.params.duration=1s"};
}

std::vector<json> history_records(const fs::path& history) {
  std::vector<json> records;
  std::istringstream lines(ernic::read_file_text(history));
  for (std::string line; std::getline(lines, line);) {
    records.push_back(json::parse(line));
  }
  return records;
}

// The run directory the run made under `runs` (there is one).
fs::path only_run_dir(const fs::path& runs) {
  std::vector<fs::path> dirs;
  for (const auto& entry : fs::directory_iterator(runs)) {
    dirs.push_back(entry.path());
  }
  REQUIRE(dirs.size() == 1);
  return dirs[0];
}

}  // namespace

TEST_CASE("a full history disk: the history is untouched, exit 3, and history append restores it") {
  auto dir = fresh_dir("full-history");
  SmallTmpfs disk(dir / "disk");
  if (!disk.mounted()) {
    WARN("cannot mount a tmpfs (" << disk.error() << "): the file size limit tests cover this");
    return;
  }
  auto history = dir / "disk" / "history.jsonl";
  std::ofstream(history) << "{\"run_id\":\"earlier\"}\n";
  // The history's one block has room for part of the next line only: the append is cut short.
  disk.fill();
  std::string before = ernic::read_file_text(history);

  auto run = run_ernicctl(quick_run(dir / "runs", history));
  INFO(run.err);
  CHECK(run.exit_code == 3);
  CHECK(ernic::read_file_text(history) == before);
  fs::path record = only_run_dir(dir / "runs") / "record.json";
  CHECK_THAT(run.err,
             Contains("No space left on device") &&
                 Contains(fmt::format("the record of this run is in {}: add it with "
                                      "`ernicctl history append {} --history {}`",
                                      record.string(), record.string(), history.string())));

  disk.make_room();
  auto append = run_ernicctl({"history", "append", record.string(), "--history", history.string()});
  INFO(append.err);
  CHECK(append.exit_code == 0);
  auto records = history_records(history);
  REQUIRE(records.size() == 2);
  CHECK(records[1] == json::parse(ernic::read_file_text(record)));
  CHECK(records[1]["ernicctl"]["status"] == "passed");
  // Appending it again adds nothing.
  auto again = run_ernicctl({"history", "append", record.string(), "--history", history.string()});
  CHECK(again.exit_code == 0);
  CHECK_THAT(again.out, Contains("nothing appended"));
  CHECK(history_records(history).size() == 2);
}

TEST_CASE("a full run directory: the record still reaches the history, and the run fails") {
  auto dir = fresh_dir("full-runs");
  SmallTmpfs disk(dir / "disk");
  if (!disk.mounted()) {
    WARN("cannot mount a tmpfs (" << disk.error() << "): the file size limit tests cover this");
    return;
  }
  fs::create_directories(dir / "disk" / "runs");
  disk.fill();
  auto history = dir / "history.jsonl";

  auto run = run_ernicctl(quick_run(dir / "disk" / "runs", history));
  INFO(run.err);
  CHECK(run.exit_code == 1);
  CHECK_THAT(run.err, Contains("cannot write") && Contains("No space left on device"));
  auto records = history_records(history);
  REQUIRE(records.size() == 1);
  CHECK(records[0]["ernicctl"]["status"] == "passed");
  CHECK(records[0]["ernicctl"]["points"].size() == 3);
}
