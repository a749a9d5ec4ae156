#include "history/history_file.h"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "base/file_text.h"
#include "file_size_limit.h"
#include "scratch_dir.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

// Every test's history file lies in this one directory, removed when the tests are done.
fs::path temp_history(const std::string& name) {
  static const ernic::testing::ScratchDir dir("ernic-history-test");
  auto path = dir / name;
  fs::remove(path);
  return path;
}

}  // namespace

TEST_CASE("history records are appended one per line with sorted keys") {
  auto path = temp_history("append.jsonl");
  ernic::append_history_record(path, json{{"sha", "abcd1234"}, {"badges", json::object()}});
  ernic::append_history_record(path, json{{"run_id", "2"}});
  std::ifstream in(path);
  std::string first, second, third;
  std::getline(in, first);
  std::getline(in, second);
  CHECK(first == R"({"badges":{},"sha":"abcd1234"})");
  CHECK(second == R"({"run_id":"2"})");
  CHECK_FALSE(std::getline(in, third));
  auto contents = ernic::read_history(path);
  CHECK(contents.records().size() == 2);
  CHECK(contents.warnings.empty());
}

TEST_CASE("a corrupt line is reported with its number, skipped, and kept by rewrites") {
  auto path = temp_history("corrupt.jsonl");
  {
    std::ofstream out(path);
    out << R"({"run_id":"1"})"
        << "\n"
        << R"({"run_id": "2", "trunc)"
        << "\n"
        << R"({"run_id":"3"})"
        << "\n";
  }
  auto contents = ernic::read_history(path);
  REQUIRE(contents.warnings.size() == 1);
  CHECK(contents.warnings[0].find(":2: not valid JSON") != std::string::npos);
  REQUIRE(contents.records().size() == 2);
  CHECK(contents.records()[1]["run_id"] == "3");

  // A rewrite that keeps every line as read preserves the corrupt one verbatim.
  ernic::rewrite_history(path, [](const ernic::HistoryContents& c) {
    std::vector<std::string> lines;
    for (const auto& line : c.lines) {
      lines.push_back(line.text);
    }
    return lines;
  });
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  std::getline(in, line);
  CHECK(line == R"({"run_id": "2", "trunc)");
}

TEST_CASE("a torn tail left by a crashed writer is cut off by the next append, which says so") {
  auto path = temp_history("torn.jsonl");
  {
    std::ofstream out(path);
    out << R"({"run_id":"1"})"
        << "\n"
        << R"({"run_id":"2)";
  }
  auto append = ernic::append_history_record(path, json{{"run_id", "3"}});
  CHECK(append.repair == path.string() +
                             ": removed a torn record of 12 bytes at the end of the file (a writer "
                             "stopped in the middle of its append)");
  CHECK(ernic::read_file_text(path) == "{\"run_id\":\"1\"}\n{\"run_id\":\"3\"}\n");
  CHECK(ernic::read_history(path).warnings.empty());
  // Mended once: the next append has nothing to repair.
  CHECK(ernic::append_history_record(path, json{{"run_id", "4"}}).repair.empty());
}

TEST_CASE("a whole last record without its newline gets one before the next append") {
  auto path = temp_history("unterminated.jsonl");
  std::ofstream(path) << R"({"run_id":"1"})";
  auto append = ernic::append_history_record(path, json{{"run_id", "2"}});
  CHECK_THAT(append.repair, Contains("the last record had no final newline; added one"));
  CHECK(ernic::read_file_text(path) == "{\"run_id\":\"1\"}\n{\"run_id\":\"2\"}\n");
}

TEST_CASE("an append that fills the disk leaves the history byte for byte as it was") {
  auto path = temp_history("full.jsonl");
  ernic::append_history_record(path, json{{"run_id", "1"}});
  std::string before = ernic::read_file_text(path);
  std::string failure;
  {
    // Room for part of the line only: the write is cut short, as on a full disk.
    ernic::testing::FileSizeLimit full(before.size() + 1000);
    try {
      ernic::append_history_record(path,
                                   json{{"run_id", "2"}, {"padding", std::string(8000, 'x')}});
    } catch (const std::exception& e) {
      failure = e.what();
    }
  }
  CHECK(failure == "cannot append to " + path.string() + ": File too large");
  CHECK(ernic::read_file_text(path) == before);
  // and the next append, with room, has no torn tail to mend
  CHECK(ernic::append_history_record(path, json{{"run_id", "3"}}).repair.empty());
  CHECK(ernic::read_history(path).records().size() == 2);
}

bool lock_file_beside(const fs::path& path) {
  for (const auto& entry : fs::directory_iterator(path.parent_path())) {
    if (entry.path().filename().string().rfind(path.filename().string() + ".lock", 0) == 0) {
      return true;
    }
  }
  return false;
}

TEST_CASE("several processes appending at once leave every line valid") {
  auto path = temp_history("concurrent.jsonl");
  constexpr int kWriters = 8;
  constexpr int kRecordsEach = 150;
  constexpr int kRewrites = 40;
  std::vector<pid_t> children;
  for (int w = 0; w < kWriters; ++w) {
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      for (int i = 0; i < kRecordsEach; ++i) {
        // A large record makes interleaving likely if appends were not atomic.
        ernic::append_history_record(
            path, json{{"writer", w}, {"i", i}, {"padding", std::string(8000, 'x')}});
      }
      ::_exit(0);
    }
    children.push_back(pid);
  }
  // A rewriter replacing the file (as `history trim` does) while the appends go on: an appender
  // waiting for the lock of the replaced file must not write into it.
  pid_t rewriter = ::fork();
  REQUIRE(rewriter >= 0);
  if (rewriter == 0) {
    for (int i = 0; i < kRewrites; ++i) {
      ernic::rewrite_history(path, [](const ernic::HistoryContents& c) {
        std::vector<std::string> lines;
        for (const auto& line : c.lines) {
          lines.push_back(line.text);
        }
        return lines;
      });
    }
    ::_exit(0);
  }
  children.push_back(rewriter);
  for (pid_t pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
  }
  auto contents = ernic::read_history(path);
  CHECK(contents.warnings.empty());
  REQUIRE(contents.records().size() == kWriters * kRecordsEach);
  std::vector<int> per_writer(kWriters, 0);
  for (const auto& record : contents.records()) {
    per_writer[record["writer"].get<int>()]++;
  }
  for (int count : per_writer) {
    CHECK(count == kRecordsEach);
  }
  // the lock is the history file's own: nothing is left beside it
  CHECK_FALSE(lock_file_beside(path));
  CHECK_FALSE(fs::exists(path.string() + ".lock"));
}

TEST_CASE("a line holding a number out of range is an unreadable line, not an abort") {
  auto path = temp_history("overflow.jsonl");
  {
    std::ofstream out(path);
    out << R"({"run_id":"1"})"
        << "\n"
        << R"({"run_id":"2","badges":{"rdma_bw_GBs":1e999}})"
        << "\n";
  }
  auto contents = ernic::read_history(path);
  REQUIRE(contents.warnings.size() == 1);
  CHECK(contents.warnings[0].find(":2: not valid JSON") != std::string::npos);
  CHECK(contents.records().size() == 1);
  ernic::append_history_record(path, json{{"run_id", "3"}});
  CHECK(ernic::read_history(path).records().size() == 2);
}
