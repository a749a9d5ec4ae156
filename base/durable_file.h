// The one way ernicctl replaces a file it writes whole (records, state, manifests, pages, CSVs):
// a temporary file with a unique name in the target's directory, every write checked, synced
// when the file is a record, then renamed over the target. A reader, a crash or a full disk
// sees the old file or the new one, never a torn or empty one, and two writers never share a
// temporary.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace ernic {

enum class Durability {
  // Survives a crash of the machine: the file is synced before the rename and its directory
  // after it. For what cannot be made again: run records, bring-up state, manifests.
  kRecord,
  // Survives a crash of ernicctl but not necessarily of the machine: no sync. For what is
  // derived from a record or rewritten every second (pages, CSVs, counters), where a sync
  // would cost more than the file is worth.
  kDerived,
};

struct DurableWriteOptions {
  Durability durability = Durability::kRecord;
  // The new file's permissions; by default those of any new file (0666 less the umask).
  std::optional<std::filesystem::perms> permissions;
};

// A file could not be written; what() names the target and the reason.
class FileWriteError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Replaces `path` with `content`, creating its directory when missing. On failure the target is
// untouched, the temporary removed, and FileWriteError thrown ("cannot write PATH: REASON").
void write_file_durably(const std::filesystem::path& path, std::string_view content,
                        const DurableWriteOptions& options = {});

// The same for a file a run can do without (a copy kept for a person to read): the reason it
// could not be written ("cannot write PATH: REASON"), or "" when it was.
std::string write_file_durably_or_reason(const std::filesystem::path& path,
                                         std::string_view content,
                                         const DurableWriteOptions& options = {});

// The content, part by part, of a file too large to build in memory first: fills `part` with
// the next one and returns true, or returns false when there is none left.
using ContentParts = std::function<bool(std::string& part)>;

// write_file_durably for content made part by part (a synthetic history of 100,000 records).
// When `next_part` throws, the target is untouched and the exception passes on.
void write_file_durably_in_parts(const std::filesystem::path& path, const ContentParts& next_part,
                                 const DurableWriteOptions& options = {});

// fsync(2)s the directory holding `path`, so that a file created or renamed there survives a
// crash of the machine. Throws FileWriteError.
void sync_parent_directory(const std::filesystem::path& path);

}  // namespace ernic
