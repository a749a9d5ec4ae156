#pragma once

#include <filesystem>
#include <string_view>

namespace ernic::reports {

// Writes `content` to a temporary file beside `path` and renames it over `path`, so a reader
// (a web server publishing the directory) never sees half a page. Creates the directory.
// Throws std::runtime_error naming the file.
void write_file_atomically(const std::filesystem::path& path, std::string_view content);

}  // namespace ernic::reports
