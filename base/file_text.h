// Whole-file reads for files that may vanish while they are read, above all /proc/PID/*: once
// the process is reaped, reading a file opened before fails with ESRCH, which a std::ifstream
// iterator throws as std::ios_base::failure, in the middle of a scan that only wanted to skip
// that process.
#pragma once

#include <filesystem>
#include <string>

namespace ernic {

// The text of `path`; what was read before an error, empty when the file cannot be opened.
std::string read_file_text(const std::filesystem::path& path);

// The rest of the open file `fd` (not closed), with the same rule.
std::string read_fd_text(int fd);

}  // namespace ernic
