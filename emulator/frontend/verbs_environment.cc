#include "frontend/verbs_environment.h"

#include <filesystem>

namespace ernic::emu {
namespace {

std::string shell_quoted(const std::string& text) {
  if (!text.empty() && text.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                              "0123456789/._-+:=,@") == std::string::npos) {
    return text;
  }
  std::string out = "'";
  for (char c : text) {
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  }
  return out + "'";
}

}  // namespace

std::vector<std::pair<std::string, std::string>> VerbsEnvironment::variables() const {
  return {{"SYSFS_PATH", sysfs_path}, {"RDMAV_DRIVERS", drivers}, {"LD_PRELOAD", preload}};
}

std::string VerbsEnvironment::command_prefix() const {
  std::string out = "env";
  for (const auto& [name, value] : variables()) {
    out += " " + name + "=" + shell_quoted(value);
  }
  return out + " ";
}

std::string verbs_library_dir() {
  std::error_code error;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) {
    return "/usr/lib/ernicctl";
  }
  return (self.parent_path().parent_path() / "lib/ernicctl").lexically_normal().string();
}

VerbsEnvironment verbs_environment(const std::string& sysfs_path, const std::string& library_dir) {
  return {sysfs_path, library_dir + "/libernic", library_dir + "/libernic-cdev.so"};
}

}  // namespace ernic::emu
