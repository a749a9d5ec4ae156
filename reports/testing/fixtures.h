#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ernic::reports::testing {

// A directory under /tmp removed with everything in it when the test ends.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

std::string read_text(const std::filesystem::path& file);
void write_text(const std::filesystem::path& file, const std::string& text);

// A point as docs/history-format.md describes it, with one sample per value.
nlohmann::json make_point(const std::string& id, const std::string& tool,
                          const nlohmann::json& params, const std::string& metric,
                          const std::string& unit, const std::string& better,
                          const std::vector<double>& values, const std::string& status = "passed",
                          const std::string& reason = "");

// An ernicctl record (rocm-ernic keys plus the ernicctl part) holding `points`.
nlohmann::json make_record(const std::string& run_id, const std::string& generated,
                           const std::string& runner, nlohmann::json points,
                           const std::string& status = "passed",
                           const std::string& scenario = "quickstart");

// A concurrent group's start as `ernicctl.groups` holds it: the points that started together
// and Jain's index over `members` (bw_avg_GBs in GB/s), with these per-repetition values (its
// median and spread from them, shares 0.4 to 0.6).
nlohmann::json make_group(const std::string& name, const std::vector<std::string>& points,
                          const std::vector<std::string>& members,
                          const std::vector<double>& jain_per_repetition);

// A record with figures of every rung: hosts with T_init (1); bw[verb=send,size=4096] with its
// bandwidth (3) and time_to_first_rts_ms (2); soak[...] with sustained: true (4);
// tenants[...] on two tenants with a jain_index (5); lat[...] alone (3) and lat-loaded[...] on
// two tenants (5), an A/B pair across rungs.
nlohmann::json make_ladder_record(const std::string& run_id);

// What running the ernicctl binary printed and returned.
struct CommandOutcome {
  int exit_code = -1;
  std::string out;
  std::string err;
};
CommandOutcome run_ernicctl(const std::string& arguments);

}  // namespace ernic::reports::testing
