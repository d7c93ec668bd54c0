#pragma once
// Who an event or a message came from (docs/timeline.md, "Sources"): every event's
// data and every message carry one. Agents (mock, openai) are ai_agent; the user's
// message is customer; what the browser UI posts is customer_ui; an operator is
// human_agent (or human_agent_on_behalf_of_ai_agent); the gateway itself is system.
#include <cstdint>
#include <optional>
#include <string_view>

namespace agw::core {

enum class event_source : std::uint8_t {
  customer,
  customer_ui,
  ai_agent,
  human_agent,
  human_agent_on_behalf_of_ai_agent,
  system,
};

std::string_view name_of(event_source source);
// The source with that name; none for a name outside the list.
std::optional<event_source> event_source_named(std::string_view name);
// What a message stored before sources existed (no source) is read as: by its role.
std::string_view default_message_source(std::string_view role);

}  // namespace agw::core
