#include "benchmarks/benchmark.h"

#include <fmt/format.h>

#include <stdexcept>

namespace ernic {

std::string host_fact(const HostFacts& facts, const std::string& key) {
  auto found = facts.find(key);
  return found == facts.end() ? "" : found->second;
}

std::string paired_tool_error(std::string_view client_error, const CommandResult& client,
                              std::string_view server_error) {
  if (!client_error.empty()) {
    if (client.ok()) {
      return fmt::format("client: {}", client_error);
    }
    return fmt::format("client: {} ({})", client_error, client.describe());
  }
  if (!client.ok()) {
    return fmt::format("client {} although its output is complete", client.describe());
  }
  if (!server_error.empty()) {
    return fmt::format("server: {}", server_error);
  }
  return {};
}

void PointParams::set(const std::string& name, std::string value) {
  for (auto& [key, existing] : entries_) {
    if (key == name) {
      existing = std::move(value);
      return;
    }
  }
  entries_.emplace_back(name, std::move(value));
}

bool PointParams::has(const std::string& name) const {
  for (const auto& [key, value] : entries_) {
    if (key == name) {
      return true;
    }
  }
  return false;
}

const std::string& PointParams::text(const std::string& name) const {
  for (const auto& [key, value] : entries_) {
    if (key == name) {
      return value;
    }
  }
  throw std::out_of_range(fmt::format("parameter '{}' is not set", name));
}

std::uint64_t PointParams::bytes(const std::string& name) const {
  return std::stoull(text(name));
}

std::uint64_t PointParams::integer(const std::string& name) const {
  return std::stoull(text(name));
}

double PointParams::milliseconds(const std::string& name) const {
  return std::stod(text(name));
}

bool PointParams::flag(const std::string& name) const {
  return text(name) == "true";
}

}  // namespace ernic
