#pragma once

#include <atomic>
#include <filesystem>
#include <functional>
#include <string>

#include "image/guest_image.h"
#include "image/recipe.h"

namespace ernic {

inline const std::filesystem::path kDefaultImageCache = "/var/cache/ernicctl/images";

struct ImageBuildOptions {
  // Images go to OUT/NAME-KEY/ (KEY from the recipe hash); debootstrap tarballs are cached in
  // OUT/debootstrap/.
  std::filesystem::path out_dir = kDefaultImageCache;
  bool force = false;                       // rebuild even when the cache has this recipe
  const std::atomic<bool>* stop = nullptr;  // Ctrl-C: stop the running step, remove the staging
  std::function<void(const std::string&)> progress;  // one line per step
};

struct ImageBuildResult {
  GuestImage image;
  bool cached = false;  // found in the cache, nothing was built
  double seconds = 0;
};

// The kernel the recipe boots: "host" picks the newest /boot/vmlinuz-V that has an initrd and
// /lib/modules/V. Throws with the fix (apt-get install linux-image-amd64) when there is none.
std::string resolve_kernel_version(const ImageRecipe& recipe,
                                   const std::filesystem::path& root = "/");

// What names a build in the cache: the recipe's bytes, the kernel it boots and the builder's
// own version (so a builder change rebuilds).
std::string image_cache_key(const ImageRecipe& recipe, const std::string& kernel_version);
// SHA-256 over the ERNIC verbs provider's files beside this ernicctl ("none" without them): the
// image carries them, so they are part of its cache key.
std::string verbs_provider_digest();

// The folder a recipe's image lives in, built or not.
std::filesystem::path image_dir(const ImageRecipe& recipe, const std::string& kernel_version,
                                const std::filesystem::path& out_dir);

// Builds the image (needs root: debootstrap, chroot) or returns the cached one. The result is
// published by renaming a staging folder, so the cache never holds half an image; on failure or
// interrupt the staging folder is removed and the error names the step and shows its output.
ImageBuildResult build_image(const ImageRecipe& recipe, const ImageBuildOptions& options);

}  // namespace ernic
