#include "image/image_digest.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "image/recipe.h"
#include "scratch_dir.h"

namespace ernic {
namespace {
namespace fs = std::filesystem;

TEST_CASE("a file's SHA-256 is computed in chunks and remembered beside it until it changes",
          "[image]") {
  testing::ScratchDir dir("ernic-digest");
  fs::path file = dir / "disk.qcow2";
  std::string bytes(3 << 20, 'x');  // more than one chunk
  bytes += "tail";
  std::ofstream(file, std::ios::binary) << bytes;

  CHECK(file_sha256(file) == sha256_hex(bytes));
  CHECK(cached_file_sha256(file) == sha256_hex(bytes));
  REQUIRE(fs::exists(dir / "disk.qcow2.sha256"));

  // Remembered: a digest written there for the file's size and time is what is returned.
  std::string remembered;
  {
    std::ifstream in(dir / "disk.qcow2.sha256");
    std::getline(in, remembered);
  }
  std::string stamp = remembered.substr(65);
  std::ofstream(dir / "disk.qcow2.sha256") << std::string(64, 'a') << " " << stamp << "\n";
  CHECK(cached_file_sha256(file) == std::string(64, 'a'));

  // A changed file is hashed again.
  std::ofstream(file, std::ios::binary | std::ios::app) << "more";
  CHECK(cached_file_sha256(file) == sha256_hex(bytes + "more"));

  Sha256Stream pieces;
  pieces.update("ab", 2);
  pieces.update("c", 1);
  CHECK(pieces.hex() == sha256_hex("abc"));
  CHECK_THROWS_WITH(file_sha256(dir / "missing"), Catch::Contains("missing: cannot read"));
}

}  // namespace
}  // namespace ernic
