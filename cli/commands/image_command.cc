#include "commands/image_command.h"

#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "base/interrupt.h"
#include "image/image_builder.h"
#include "image/recipe.h"

namespace ernic {
namespace {

struct ImageBuildFlags {
  std::string recipe;
  std::string out_dir = kDefaultImageCache.string();
  bool force = false;
  bool json = false;
};

int run_image_build(const ImageBuildFlags& flags) {
  ImageRecipe recipe;
  try {
    recipe = load_image_recipe(flags.recipe);
  } catch (const std::exception& error) {
    std::cerr << "error: " << error.what() << "\n";
    return kExitBadInput;
  }
  // Ctrl-C stops the running step and removes the staging folder instead of leaving
  // debootstrap running.
  Interrupt::install();
  ImageBuildOptions options;
  options.out_dir = flags.out_dir;
  options.force = flags.force;
  options.progress = [](const std::string& line) { std::cerr << line << std::endl; };
  try {
    auto result = build_image(recipe, options);
    const auto& image = result.image;
    if (flags.json) {
      std::cout << fmt::format(R"({{"manifest": "{}", "cached": {}, "seconds": {:.1f}}})",
                               image.manifest.string(), result.cached, result.seconds)
                << "\n";
    } else {
      std::cout << fmt::format(
          "{} {} (kernel {}, user {}, {} host keys)\n",
          result.cached ? "cached:" : "built in " + fmt::format("{:.1f} s:", result.seconds),
          image.manifest.string(), image.kernel_version, image.user, image.host_keys.size());
    }
    return kExitOk;
  } catch (const std::exception& error) {
    std::cerr << "error: " << error.what() << "\n";
    return Interrupt::requested() ? kExitInterrupted : kExitFailed;
  }
}

}  // namespace

void register_image_command(CLI::App& app, CommandContext& context) {
  auto* image = app.add_subcommand("image", "Guest disk images for the libvirt provider");
  image->require_subcommand(1);
  auto flags = std::make_shared<ImageBuildFlags>();
  auto* build = image->add_subcommand(
      "build", "Build a guest image from a recipe (cached by the recipe's hash)");
  build->add_option("recipe", flags->recipe, "Image recipe, e.g. images/debian12-rdma.yaml")
      ->required()
      ->check(CLI::ExistingFile);
  build->add_option("--out", flags->out_dir, "Image cache folder")->capture_default_str();
  build->add_flag("--force", flags->force, "Rebuild even when the cache has this recipe");
  build->add_flag("--json", flags->json, "Print the result as JSON");
  build->callback([flags, &context] { context.exit_code = run_image_build(*flags); });
}

}  // namespace ernic
