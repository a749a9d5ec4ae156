#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

namespace ernic::emu {

// A fresh directory under /tmp for one test, removed afterwards. Short paths: UNIX socket
// paths are limited to 108 bytes.
class TestDir {
 public:
  explicit TestDir(const std::string& name) {
    path_ =
        std::filesystem::temp_directory_path() / ("ernic-" + name + "-" + std::to_string(getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TestDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TestDir(const TestDir&) = delete;
  TestDir& operator=(const TestDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace ernic::emu
