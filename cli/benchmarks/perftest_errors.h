#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace ernic::perftest_errors {

// What a perftest (or verbs) error line usually means, for the known ones: "Failed status N"
// gets the ibv_wc_status name, "Couldn't create CQ" the memlock limit.
std::optional<std::string> error_hint(std::string_view line);
// A line that reports a failure: a known error or one of perftest's failure words.
bool is_error_line(std::string_view line);
bool is_known_warning(std::string_view line);

}  // namespace ernic::perftest_errors
