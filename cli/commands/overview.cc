#include "commands/overview.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

namespace ernic {
namespace {

// The first line of a description: the overview keeps one line per subcommand.
std::string first_line(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

}  // namespace

std::string command_overview(const CLI::App& app, const std::string& quickstart) {
  std::string text = fmt::format("{}\n\nUsage: ernicctl COMMAND [ARGS]...\n\nCommands:\n",
                                 first_line(app.get_description()));
  std::size_t width = 0;
  // Hidden commands (CLI11's empty group) stay hidden here too.
  const std::vector<const CLI::App*> commands =
      app.get_subcommands([](const CLI::App* command) { return !command->get_group().empty(); });
  for (const CLI::App* command : commands) {
    width = std::max(width, command->get_name().size());
  }
  for (const CLI::App* command : commands) {
    text += fmt::format("  {:<{}}  {}\n", command->get_name(), width,
                        first_line(command->get_description()));
  }
  text += fmt::format(
      "\nStart with:\n"
      "  ernicctl run {0} --dry-run   # every command the quickstart would issue\n"
      "  ernicctl run {0}             # run it: the embedded emulator, no VMs or RDMA hardware\n"
      "\n'ernicctl COMMAND --help' describes a command's arguments and flags.\n",
      quickstart);
  return text;
}

std::string quickstart_path(const std::string& program) {
  const std::filesystem::path checkout = "scenarios/quickstart.yaml";
  std::error_code error;
  if (std::filesystem::is_regular_file(checkout, error)) {
    return checkout.string();
  }
  std::filesystem::path binary = std::filesystem::canonical("/proc/self/exe", error);
  if (error) {
    binary = program;
  }
  std::filesystem::path installed =
      binary.parent_path().parent_path() / "share/ernicctl/scenarios/quickstart.yaml";
  if (std::filesystem::is_regular_file(installed, error)) {
    return installed.lexically_normal().string();
  }
  return checkout.string();
}

}  // namespace ernic
