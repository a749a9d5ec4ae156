#include "frontend/guest_region_file.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "test_dir.h"

namespace ernic::emu {
namespace {

constexpr std::uint64_t kSize = 32u << 20;

TEST_CASE("a guest region file is set up with a new epoch, free slots and an empty heap") {
  TestDir dir("guest-region");
  const auto path = (dir / "region").string();
  std::uint64_t first_epoch = 0;
  {
    GuestRegionFile file(path, kSize);
    CHECK(std::filesystem::file_size(path) == kSize);
    const region::Header& h = file.header();
    CHECK(region::layout_matches(h, kSize));
    first_epoch = h.epoch.load();
    CHECK(first_epoch != 0);
    file.slot(3).owner.store(77);
    file.beat();
    CHECK(h.heartbeat.load() == 1);
  }
  // A program still mapping the file sees the stopped instance's epoch go to 0.
  GuestRegionFile again(path, 0);  // an existing file keeps its size
  CHECK(again.size() == kSize);
  CHECK(again.header().epoch.load() != first_epoch);
  CHECK(again.slot(3).owner.load() == 0);
}

TEST_CASE("the heap gives out page-aligned room, refuses what does not fit and coalesces") {
  TestDir dir("guest-region");
  GuestRegionFile file((dir / "region").string(), kSize);
  const std::uint64_t heap = file.header().heap_size;
  const auto a = file.allocate(1);
  const auto b = file.allocate(region::kPage + 1);
  REQUIRE(a);
  REQUIRE(b);
  CHECK(*a == region::kHeapOffset);
  CHECK(*b == *a + region::kPage);
  CHECK(file.heap_in_use() == 3 * region::kPage);
  CHECK_FALSE(file.allocate(heap));
  file.free(*a);
  file.free(*b);
  CHECK(file.heap_in_use() == 0);
  // Freed neighbours merged back into one range: the whole heap fits again.
  const auto all = file.allocate(heap);
  REQUIRE(all);
  CHECK(*all == region::kHeapOffset);
}

TEST_CASE("a guest region file too small or of an odd size is refused, naming it") {
  TestDir dir("guest-region");
  const auto path = (dir / "small").string();
  { std::ofstream(path) << std::string(4096, 'x'); }
  CHECK_THROWS_WITH(GuestRegionFile(path, kSize),
                    Catch::Contains(path) && Catch::Contains("16 MiB"));
  CHECK_THROWS_WITH(GuestRegionFile((dir / "missing/dir/f").string(), kSize),
                    Catch::Contains("cannot open"));
}

}  // namespace
}  // namespace ernic::emu
