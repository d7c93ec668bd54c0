#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/tools/tool.hpp"

namespace agw::core {

// Name -> tool lookup table.
// Thread-safety: populate with add() during setup on one thread; afterwards the
// registry is treated as immutable and the const members (find, all) may be
// called concurrently from any thread.
class tool_registry {
 public:
  tool_registry() = default;
  tool_registry(const tool_registry&) = delete;
  tool_registry& operator=(const tool_registry&) = delete;
  tool_registry(tool_registry&&) noexcept = default;
  tool_registry& operator=(tool_registry&&) noexcept = default;

  // Registers t under t->name(), replacing any tool already registered under
  // that name. A null pointer is ignored.
  void add(std::unique_ptr<tool> t);

  // Returns nullptr when no tool has that name.
  const tool* find(std::string_view name) const;

  // All registered tools, sorted by name (stable order for `tools` declarations).
  std::vector<const tool*> all() const;

 private:
  // std::less<> enables lookup by string_view without building a std::string.
  std::map<std::string, std::unique_ptr<tool>, std::less<>> tools_;
};

// Registry holding every built-in tool (calculator, current_time). `now` is the
// clock used by current_time; injectable so tests are deterministic.
tool_registry make_builtin_tools(std::function<std::chrono::system_clock::time_point()> now = std::chrono::system_clock::now);

}  // namespace agw::core
