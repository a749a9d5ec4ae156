#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "plan/plan.h"

namespace ernic {

// Which of a plan's points to run (`run --only/--skip/--repeat/--rerun-failed`).
struct PointSelection {
  std::vector<std::string> only;  // patterns; a point runs when it matches one (all when none)
  std::vector<std::string> skip;  // patterns; a point that matches one does not run
  int repeat = 0;                 // repetitions of every selected point; 0: as the scenario says
  std::filesystem::path rerun_failed;  // a run directory: only the points that failed there

  bool everything() const {
    return only.empty() && skip.empty() && repeat == 0 && rerun_failed.empty();
  }
  // How the record and the summary name the selection, e.g. "--only 'bw[verb=write,*]'".
  std::string describe() const;
};

// A selection that cannot be applied: a pattern no point matches, an unreadable run directory.
class SelectionError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Whether point id `id` matches `pattern`, where `*` is any run of characters and `?` any one
// character; everything else, brackets included (ids contain them), stands for itself.
bool matches_pattern(std::string_view pattern, std::string_view id);

// Keeps the selected points of `plan`, in plan order and renumbered, with `repeat` applied. Throws
// SelectionError naming the closest ids when a pattern matches no point.
void select_points(Plan& plan, const PointSelection& selection);

}  // namespace ernic
