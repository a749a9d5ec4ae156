#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ernic {

// A tool's output that is not a result. Names the tool, the line (0 when it is not about one
// line) and what was expected.
class ParseError : public std::runtime_error {
 public:
  ParseError(std::string tool, int line, const std::string& message);
  const std::string& tool() const { return tool_; }
  int line() const { return line_; }

 private:
  std::string tool_;
  int line_;
};

// What `ernicctl parse TOOL FILE` prints. `partial` holds what was read before a failure
// (a perftest table cut short by a completion error) and is printed along with the error.
struct ParsedFile {
  nlohmann::json data;
  std::string error;  // empty when the file holds a complete result
};

struct OutputParser {
  std::string tool;         // the name users type: iperf3, perftest, pingpong, fio
  std::string description;  // one line for --help
  ParsedFile (*parse)(std::string_view text);
};

}  // namespace ernic
