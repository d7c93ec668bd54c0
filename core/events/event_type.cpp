#include "core/events/event_type.hpp"

#include <array>

namespace agw::core {

namespace {

// Indexed by the enum's value.
constexpr std::array<std::string_view, 14> names{"status",   "token",         "reasoning",  "tool_call",  "tool_result",
                                                 "planning", "step_complete", "delegation", "usage",      "error",
                                                 "custom",   "message",       "done",       "reconnected"};
static_assert(names.size() == static_cast<std::size_t>(event_type::reconnected) + 1);

}  // namespace

std::string_view name_of(event_type type) { return names[static_cast<std::size_t>(type)]; }

std::optional<event_type> event_type_named(std::string_view name) {
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return static_cast<event_type>(i);
  return std::nullopt;
}

}  // namespace agw::core
