#pragma once

#include <string>

#include "scratch_dir.h"

namespace ernic::emu {

// A fresh directory under /tmp for one test, removed afterwards. Short names: UNIX socket
// paths are limited to 108 bytes.
class TestDir : public testing::ScratchDir {
 public:
  explicit TestDir(const std::string& name) : ScratchDir("ernic-" + name) {}
};

}  // namespace ernic::emu
