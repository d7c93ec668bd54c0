#pragma once
// The kinds of event in a session's sequence (the contract's event table). Code
// decides what an event is by this value, never by looking at an encoding.
#include <cstdint>
#include <optional>
#include <string_view>

namespace agw::core {

enum class event_type : std::uint8_t {
  status,
  token,
  reasoning,
  tool_call,
  tool_result,
  planning,
  step_complete,
  delegation,
  usage,
  error,
  custom,
  message,
  done,
  reconnected,  // unnumbered: opens a resume, never stored
};

// The contract's name (the SSE `event:` field, the long poll's "event").
std::string_view name_of(event_type type);
// The type with that name; none for a name the contract does not define.
std::optional<event_type> event_type_named(std::string_view name);

}  // namespace agw::core
