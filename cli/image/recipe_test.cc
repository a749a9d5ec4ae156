#include "image/recipe.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "image/guest_image.h"
#include "image/image_builder.h"

namespace ernic {
namespace {
namespace fs = std::filesystem;

constexpr const char* kMinimal = "name: t\npackages: [openssh-server, sudo]\n";

TEST_CASE("the default recipe parses", "[image]") {
  auto recipe = load_image_recipe(fs::path(ERNIC_SOURCE_DIR) / "images/debian12-rdma.yaml");
  CHECK(recipe.name == "debian12-rdma");
  CHECK(recipe.suite == "bookworm");
  CHECK(recipe.variant == "minbase");
  for (const char* package : {"perftest", "ibverbs-utils", "rdma-core", "iperf3", "fio", "dbus"}) {
    CHECK(std::find(recipe.packages.begin(), recipe.packages.end(), package) !=
          recipe.packages.end());
  }
  CHECK(std::find(recipe.modules_require.begin(), recipe.modules_require.end(), "rdma_rxe") !=
        recipe.modules_require.end());
  CHECK(recipe.memlock == "unlimited");
  CHECK(recipe.user == "ernic");
}

TEST_CASE("recipe errors name the file, line and key", "[image]") {
  CHECK_THROWS_WITH(parse_image_recipe("name: t\npackagez: [a]\n", "r.yaml"),
                    Catch::Contains("r.yaml:2: unknown key 'packagez'"));
  CHECK_THROWS_WITH(parse_image_recipe("packages: [openssh-server]\n", "r.yaml"),
                    Catch::Contains("name is required"));
  CHECK_THROWS_WITH(
      parse_image_recipe("name: t\npackages: [iperf3]\nuser: {sudo: false}\n", "r.yaml"),
      Catch::Contains("openssh-server is required"));
  CHECK_THROWS_WITH(parse_image_recipe("name: t\npackages: [openssh-server]\n", "r.yaml"),
                    Catch::Contains("needs the sudo package"));
  CHECK_THROWS_WITH(parse_image_recipe(std::string(kMinimal) + "disk_size: 10MiB\n", "r.yaml"),
                    Catch::Contains("disk_size"));
  CHECK_THROWS_WITH(parse_image_recipe(std::string(kMinimal) + "mirror: ftp://x\n", "r.yaml"),
                    Catch::Contains("mirror"));
  CHECK_THROWS_WITH(
      parse_image_recipe(std::string(kMinimal) + "modules: {drop: [../../etc]}\n", "r.yaml"),
      Catch::Contains("inside /lib/modules"));
  CHECK_THROWS_WITH(parse_image_recipe("name: 'a b'\npackages: [openssh-server, sudo]\n", "r.yaml"),
                    Catch::Contains("'a b' is not allowed"));
  CHECK_THROWS_WITH(parse_image_recipe("name: [\n", "r.yaml"), Catch::Contains("r.yaml:"));
}

TEST_CASE("the cache key changes with the recipe's bytes and the kernel, nothing else", "[image]") {
  auto a = parse_image_recipe(kMinimal, "a.yaml");
  auto same = parse_image_recipe(kMinimal, "elsewhere/b.yaml");
  auto edited = parse_image_recipe(std::string(kMinimal) + "# a comment\n", "a.yaml");
  CHECK(image_cache_key(a, "6.1.0-1") == image_cache_key(same, "6.1.0-1"));
  CHECK(image_cache_key(a, "6.1.0-1") != image_cache_key(edited, "6.1.0-1"));
  CHECK(image_cache_key(a, "6.1.0-1") != image_cache_key(a, "6.1.0-2"));
  CHECK(image_dir(a, "6.1.0-1", "/c").parent_path() == "/c");
  CHECK(image_dir(a, "6.1.0-1", "/c").filename().string().rfind("t-", 0) == 0);
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_CASE("the newest installed Debian kernel with initrd and modules is the guest kernel",
          "[image]") {
  fs::path root = fs::temp_directory_path() / "ernic-kernel-root";
  fs::remove_all(root);
  fs::create_directories(root / "boot");
  for (const char* version : {"6.1.0-9-amd64", "6.1.0-10-amd64", "6.1.0-11-amd64"}) {
    std::ofstream(root / "boot" / (std::string("vmlinuz-") + version)) << "k";
  }
  // 6.1.0-11 has no initrd: not bootable as built.
  for (const char* version : {"6.1.0-9-amd64", "6.1.0-10-amd64"}) {
    std::ofstream(root / "boot" / (std::string("initrd.img-") + version)) << "i";
    fs::create_directories(root / "lib/modules" / version);
  }
  ImageRecipe recipe;
  CHECK(resolve_kernel_version(recipe, root) == "6.1.0-10-amd64");  // version order, not text
  recipe.kernel = "6.1.0-9-amd64";
  CHECK(resolve_kernel_version(recipe, root) == "6.1.0-9-amd64");
  recipe.kernel = "6.1.0-11-amd64";
  CHECK_THROWS_WITH(resolve_kernel_version(recipe, root), Catch::Contains("not installed"));
  fs::remove_all(root / "boot");
  recipe.kernel = "host";
  CHECK_THROWS_WITH(resolve_kernel_version(recipe, root),
                    Catch::Contains("apt-get install linux-image-amd64"));
  fs::remove_all(root);
}

TEST_CASE("image manifests: ernicctl's and rocm-ernic's vm-info.json", "[image]") {
  fs::path dir = fs::temp_directory_path() / "ernic-manifest-test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "disk.qcow2") << "q";
  std::ofstream(dir / "key") << "k";
  std::ofstream(dir / "ssh_host_ed25519_key.pub") << "ssh-ed25519 AAAAC3Nza root@x\n";
  std::ofstream(dir / "vm-info.json")
      << R"({"vm_name": "ernic-vm", "qcow2": "disk.qcow2", "ssh_user": "ubuntu", "ssh_key": "key"})";
  auto image = load_image_manifest(dir / "vm-info.json");
  CHECK(image.name == "ernic-vm");
  CHECK(image.disk == dir / "disk.qcow2");
  CHECK(image.user == "ubuntu");
  CHECK(image.private_key == dir / "key");
  CHECK(image.kernel.empty());
  REQUIRE(image.host_keys.size() == 1);
  CHECK(image.host_keys[0].line() == "ssh-ed25519 AAAAC3Nza");

  std::ofstream(dir / "broken.json")
      << R"({"vm_name": "x", "qcow2": "missing.qcow2", "ssh_user": "u", "ssh_key": "key"})";
  CHECK_THROWS_WITH(load_image_manifest(dir / "broken.json"),
                    Catch::Contains("missing.qcow2 does not exist"));
  std::ofstream(dir / "nojson.json") << "{";
  CHECK_THROWS_WITH(load_image_manifest(dir / "nojson.json"), Catch::Contains("not JSON"));
  fs::remove_all(dir);
}

TEST_CASE("public key lines: types, comments and junk", "[image]") {
  auto keys = parse_public_keys(
      "# comment\nssh-ed25519 AAAA1 root@a\necdsa-sha2-nistp256 AAAA2\nnonsense\n\n");
  REQUIRE(keys.size() == 2);
  CHECK(keys[0].type == "ssh-ed25519");
  CHECK(keys[1].base64 == "AAAA2");
}

}  // namespace
}  // namespace ernic
