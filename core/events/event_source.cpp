#include "core/events/event_source.hpp"

#include <array>

namespace agw::core {

namespace {

// Indexed by the enum's value.
constexpr std::array<std::string_view, 6> names{
    "customer", "customer_ui", "ai_agent", "human_agent", "human_agent_on_behalf_of_ai_agent", "system"};
static_assert(names.size() == static_cast<std::size_t>(event_source::system) + 1);

}  // namespace

std::string_view name_of(event_source source) { return names[static_cast<std::size_t>(source)]; }

std::optional<event_source> event_source_named(std::string_view name) {
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return static_cast<event_source>(i);
  return std::nullopt;
}

std::string_view default_message_source(std::string_view role) {
  // Only user turns were ever typed by a person; assistant and tool turns were the agent's.
  if (role == "user") return "customer";
  if (role == "system") return "system";
  return "ai_agent";
}

}  // namespace agw::core
