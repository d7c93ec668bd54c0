#include "core/tools/tool_registry.hpp"

#include <utility>

#include "core/tools/calculator.hpp"
#include "core/tools/current_time.hpp"

namespace agw::core {

void tool_registry::add(std::unique_ptr<tool> t) {
  if (!t) return;
  std::string key(t->name());
  tools_.insert_or_assign(std::move(key), std::move(t));
}

const tool* tool_registry::find(std::string_view name) const {
  const auto it = tools_.find(name);
  return it == tools_.end() ? nullptr : it->second.get();
}

std::vector<const tool*> tool_registry::all() const {
  std::vector<const tool*> out;
  out.reserve(tools_.size());
  // std::map iterates in key order, which is exactly the "sorted by name" contract.
  for (const auto& [name, t] : tools_) out.push_back(t.get());
  return out;
}

tool_registry make_builtin_tools(std::function<std::chrono::system_clock::time_point()> now) {
  tool_registry registry;
  registry.add(std::make_unique<calculator>());
  registry.add(std::make_unique<current_time>(std::move(now)));
  return registry;
}

}  // namespace agw::core
