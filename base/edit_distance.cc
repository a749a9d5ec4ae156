#include "base/edit_distance.h"

#include <algorithm>
#include <cctype>
#include <numeric>

namespace ernic {

int edit_distance(std::string_view a, std::string_view b) {
  std::vector<int> row(b.size() + 1);
  std::iota(row.begin(), row.end(), 0);
  for (std::size_t i = 1; i <= a.size(); ++i) {
    int diagonal = row[0];
    row[0] = static_cast<int>(i);
    for (std::size_t j = 1; j <= b.size(); ++j) {
      int above = row[j];
      int substitution = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      row[j] = std::min({above + 1, row[j - 1] + 1, substitution});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string closest_match(std::string_view word, const std::vector<std::string>& candidates) {
  std::string lowered(word);
  std::transform(lowered.begin(), lowered.end(), lowered.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  // Allow about one typo per three characters; one in words of four or more.
  int limit = std::max(word.size() >= 4 ? 1 : 0, static_cast<int>(word.size()) / 3);
  std::string best;
  int best_distance = limit + 1;
  for (const auto& candidate : candidates) {
    int distance = edit_distance(lowered, candidate);
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  return best;
}

}  // namespace ernic
