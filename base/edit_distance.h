#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ernic {

// Levenshtein distance, for "did you mean" suggestions.
int edit_distance(std::string_view a, std::string_view b);

// The candidate closest to `word`, or "" when none is close enough to be a plausible typo.
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace ernic
