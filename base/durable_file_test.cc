#include "base/durable_file.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/file_text.h"
#include "file_size_limit.h"
#include "scratch_dir.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using ernic::Durability;
using ernic::write_file_durably;

namespace {

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Version `n` of a file whose every byte says which version it is and how long it is, so that a
// torn or mixed file is told from a whole one: "v<n> <size>\n" then filler, then "end\n".
std::string version(unsigned n, std::size_t size) {
  std::string head = "v" + std::to_string(n) + " " + std::to_string(size) + "\n";
  std::string text = head + std::string(size - head.size() - 4, static_cast<char>('a' + n % 26));
  return text + "end\n";
}

bool is_whole_version(const std::string& text) {
  unsigned n = 0;
  std::size_t size = 0;
  if (std::sscanf(text.c_str(), "v%u %zu\n", &n, &size) != 2) {
    return false;
  }
  return text.size() == size && text == version(n, size);
}

}  // namespace

TEST_CASE("a durable write replaces the file and leaves nothing beside it") {
  ernic::testing::ScratchDir dir("ernic-durable-replace");
  auto target = dir / "sub" / "record.json";
  write_file_durably(target, "first\n");
  write_file_durably(target, "second\n", {.durability = Durability::kDerived});
  CHECK(ernic::read_file_text(target) == "second\n");
  CHECK(names_in(dir / "sub") == std::vector<std::string>{"record.json"});
}

TEST_CASE("a durable write gives the file the permissions asked for") {
  ernic::testing::ScratchDir dir("ernic-durable-mode");
  auto target = dir / "script.sh";
  write_file_durably(target, "#!/bin/sh\n", {.permissions = fs::perms(0751)});
  CHECK((fs::status(target).permissions() & fs::perms::all) == fs::perms(0751));
}

TEST_CASE("a durable write on a full disk leaves the old file and no temporary") {
  ernic::testing::ScratchDir dir("ernic-durable-full");
  auto target = dir / "bandwidth.csv";
  write_file_durably(target, "old\n");
  std::string failure;
  {
    ernic::testing::FileSizeLimit full(4096);
    try {
      write_file_durably(target, std::string(10000, 'x'));
    } catch (const ernic::FileWriteError& e) {
      failure = e.what();
    }
  }
  CHECK_THAT(failure, Contains("cannot write " + target.string() + ": File too large"));
  CHECK(ernic::read_file_text(target) == "old\n");
  CHECK(names_in(dir) == std::vector<std::string>{"bandwidth.csv"});
}

TEST_CASE("a file written in parts is their concatenation, and a failing part keeps the old file") {
  ernic::testing::ScratchDir dir("ernic-durable-parts");
  auto target = dir / "history.jsonl";
  int made = 0;
  ernic::write_file_durably_in_parts(target, [&](std::string& part) {
    part = "record " + std::to_string(made) + "\n";
    return made++ < 3;
  });
  CHECK(ernic::read_file_text(target) == "record 0\nrecord 1\nrecord 2\n");

  made = 0;
  CHECK_THROWS_WITH(ernic::write_file_durably_in_parts(target,
                                                       [&](std::string& part) {
                                                         if (made++ == 2) {
                                                           throw std::runtime_error("no record 2");
                                                         }
                                                         part = "new\n";
                                                         return true;
                                                       }),
                    "no record 2");
  CHECK(ernic::read_file_text(target) == "record 0\nrecord 1\nrecord 2\n");
  CHECK(names_in(dir) == std::vector<std::string>{"history.jsonl"});

  std::string failure;
  {
    ernic::testing::FileSizeLimit full(4096);
    made = 0;
    try {
      ernic::write_file_durably_in_parts(target, [&](std::string& part) {
        part.assign(1000, 'x');
        return made++ < 10;
      });
    } catch (const ernic::FileWriteError& e) {
      failure = e.what();
    }
  }
  CHECK_THAT(failure, Contains("File too large"));
  CHECK(ernic::read_file_text(target) == "record 0\nrecord 1\nrecord 2\n");
  CHECK(names_in(dir) == std::vector<std::string>{"history.jsonl"});
}

TEST_CASE("a durable write into a directory it cannot create names the target") {
  ernic::testing::ScratchDir dir("ernic-durable-nodir");
  write_file_durably(dir / "plain", "a file, not a directory\n");
  CHECK_THROWS_WITH(write_file_durably(dir / "plain" / "record.json", "{}\n"),
                    Contains("cannot write " + (dir / "plain" / "record.json").string()));
}

TEST_CASE("concurrent durable writers never share a temporary: the file is one of theirs, whole") {
  ernic::testing::ScratchDir dir("ernic-durable-concurrent");
  auto target = dir / "up.json";
  std::vector<std::thread> writers;
  for (unsigned writer = 0; writer < 4; ++writer) {
    writers.emplace_back([&target, writer] {
      for (unsigned round = 0; round < 25; ++round) {
        write_file_durably(target, version(writer * 100 + round, 20000),
                           {.durability = Durability::kDerived});
      }
    });
  }
  for (auto& writer : writers) {
    writer.join();
  }
  CHECK(is_whole_version(ernic::read_file_text(target)));
  CHECK(names_in(dir) == std::vector<std::string>{"up.json"});
}

TEST_CASE("a writer killed at a random point, 20 times, never leaves a torn or empty file") {
  ernic::testing::ScratchDir dir("ernic-durable-killed");
  auto target = dir / "instances.json";
  write_file_durably(target, version(0, 4096));
  std::mt19937 random(std::random_device{}());
  std::uniform_int_distribution<int> delay_us(0, 30000);
  for (int kill = 0; kill < 20; ++kill) {
    pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      // Rewrites as fast as it can, each version a different size, synced like a record: the
      // kill lands in a write, a sync, the rename or between them.
      for (unsigned n = 1;; ++n) {
        write_file_durably(target, version(n, 4096 + (n * 7919) % 300000));
      }
    }
    ::usleep(static_cast<useconds_t>(delay_us(random)));
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    std::string text = ernic::read_file_text(target);
    INFO("kill " << kill << ": " << text.size() << " bytes");
    REQUIRE(is_whole_version(text));
  }
}
