#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ernic {

enum class Severity {
  kError,    // the scenario cannot be used
  kWarning,  // valid, but probably not what was meant; the run goes ahead
};

// One problem found in a scenario (or in a --set override), located precisely enough that an
// editor can jump to it.
struct Diagnostic {
  std::string file;
  int line = 0;      // 1-based; 0 when unknown
  int column = 0;    // 1-based
  std::string path;  // key path, e.g. "benchmarks[1].params.size"
  std::string message;
  Severity severity = Severity::kError;

  // "quickstart.yaml:12:7: benchmarks[1].params.size: expected a size such as 4KiB, found ..."
  // and "quickstart.yaml:3:9: warning: runner: ..."; control characters a scenario holds
  // (escape sequences, carriage returns) are printed escaped, so they never reach a terminal.
  std::string format() const;
};

using Diagnostics = std::vector<Diagnostic>;

// `text` with every control character escaped: \n, \r, \t, \xHH for the other C0 characters,
// DEL and bytes that are not UTF-8, \uHHHH (\UHHHHHHHH above U+FFFF) for the code points that
// print no glyph: C1 characters (U+0080 to U+009F, NEL U+0085 among them), the line and
// paragraph separators U+2028 and U+2029, format characters (zero-width, bidirectional) and
// noncharacters. So one diagnostic stays one line for a terminal and for a log parser.
std::string escape_control_characters(std::string_view text);

}  // namespace ernic
