#pragma once

#include <string>

namespace ernic {

// A program something needs on a host, and the Debian package that installs it (what `doctor`
// and the preflight check tell the user to install).
struct Program {
  std::string name;
  std::string debian_package;
  // What does without it, for the message that says it is missing ("or measure with ...");
  // empty when nothing does.
  std::string instead = {};
};

}  // namespace ernic
