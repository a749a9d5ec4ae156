// The recorded tool outputs in tests/samples (copied from the ERNIC project's shared samples)
// that parser, benchmark and report tests read.
#pragma once

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace ernic::testing {

inline std::filesystem::path sample_path(const std::string& name) {
  return std::filesystem::path(ERNIC_SAMPLES_DIR) / name;
}

// The sample's bytes, exactly; the calling test stops when the sample is missing.
inline std::string read_sample(const std::string& name) {
  std::ifstream in(sample_path(name), std::ios::binary);
  INFO("sample " << sample_path(name).string());
  REQUIRE(in.good());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace ernic::testing
