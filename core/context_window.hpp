#pragma once
// config.context: which part of a conversation a provider is sent (docs/sessions.md,
// "Context window"). The stored conversation never changes; only the provider's
// input is bounded. Pure functions; thread-safe.
//
// The rules, in order:
//  - the conversation is cut into units: a message, or an assistant message that
//    called tools together with the tool results that answer it (never split);
//  - units are kept newest first while they fit: max_events counts messages, and a
//    unit is too old when its newest message is older than max_age_seconds;
//    the first unit that does not fit ends the window (it is a suffix, no gaps);
//  - the newest unit is always kept (the run's own turn, or the tool round it is in);
//  - the first user message is always kept, before the window, when it fell out.
#include <boost/json/object.hpp>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/store_records.hpp"

namespace agw::core {

struct context_window {
  std::optional<std::int64_t> max_events;       // messages
  std::optional<std::int64_t> max_age_seconds;  // against the messages' created_at
  bool bounded() const { return max_events || max_age_seconds; }
};

struct context_window_limits {
  static constexpr std::int64_t max_events = 100'000;
  static constexpr std::int64_t max_age_seconds = 10LL * 366 * 24 * 3600;
};

// config.context (absent or null: unbounded). Throws api_error(bad_request) naming the field.
context_window parse_context_window(const boost::json::object& config);

// The messages to send, oldest first, per the rules above; `now_ms` is the wall clock.
std::vector<message_record> bound_conversation(const std::vector<message_record>& messages, const context_window& window,
                                               std::int64_t now_ms);

}  // namespace agw::core
