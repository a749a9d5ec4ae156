#include "output_files.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace ernic::reports {

void write_file_atomically(const std::filesystem::path& path, std::string_view content) {
  std::error_code ec;
  if (path.has_parent_path()) {
    std::filesystem::create_directories(path.parent_path(), ec);
    if (ec) {
      throw std::runtime_error(
          fmt::format("cannot create {}: {}", path.parent_path().string(), ec.message()));
    }
  }
  auto temp = path;
  temp += fmt::format(".tmp.{}", ::getpid());
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    out.flush();
    if (!out) {
      std::filesystem::remove(temp, ec);
      throw std::runtime_error(fmt::format("cannot write {}: {}", temp.string(), std::strerror(errno)));
    }
  }
  std::filesystem::rename(temp, path, ec);
  if (ec) {
    std::filesystem::remove(temp, ec);
    throw std::runtime_error(fmt::format("cannot replace {}: {}", path.string(), ec.message()));
  }
}

}  // namespace ernic::reports
