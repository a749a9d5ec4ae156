#pragma once

// The program's version and the git commit it was built from. Defined in one generated source
// (version.cc.in) so that a new commit recompiles that file alone.
namespace ernic {

const char* ernic_version();  // "0.1.0"
const char* ernic_git_sha();  // "dab2cfd1", or "unknown" outside a git checkout

}  // namespace ernic
