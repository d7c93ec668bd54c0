#include "core/context_window.hpp"

#include <algorithm>
#include <set>

#include "core/api_error.hpp"

namespace agw::core {
namespace {

[[noreturn]] void bad(const std::string& message) { throw api_error(error_code::bad_request, message); }

std::int64_t positive(const boost::json::value& v, const char* name, std::int64_t max) {
  const bool ok = (v.is_int64() && v.get_int64() >= 1 && v.get_int64() <= max) ||
                  (v.is_uint64() && v.get_uint64() >= 1 && v.get_uint64() <= static_cast<std::uint64_t>(max));
  if (!ok) bad(std::string("config.context.") + name + " must be an integer from 1 to " + std::to_string(max));
  return v.to_number<std::int64_t>();
}

// [first, last) of each unit, oldest first.
std::vector<std::pair<std::size_t, std::size_t>> units_of(const std::vector<message_record>& messages) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  std::size_t i = 0;
  while (i < messages.size()) {
    std::size_t end = i + 1;
    const auto& m = messages[i];
    if (m.role == "assistant" && !m.tool_calls.empty()) {
      std::set<std::string> ids;
      for (const auto& c : m.tool_calls)
        if (const auto* o = c.if_object())
          if (const auto* id = o->if_contains("id"); id && id->is_string()) ids.emplace(id->get_string());
      // Its results follow it (a run appends them right after the call).
      while (end < messages.size() && messages[end].role == "tool" && messages[end].tool_call_id &&
             ids.count(*messages[end].tool_call_id))
        ++end;
    }
    out.emplace_back(i, end);
    i = end;
  }
  return out;
}

}  // namespace

context_window parse_context_window(const boost::json::object& config) {
  context_window w;
  const auto* v = config.if_contains("context");
  if (!v || v->is_null()) return w;
  if (!v->is_object()) bad("config.context must be an object {\"max_events\": n, \"max_age_seconds\": s}");
  for (const auto& [key, value] : v->get_object()) {
    if (key == "max_events")
      w.max_events =
          value.is_null() ? std::nullopt : std::optional(positive(value, "max_events", context_window_limits::max_events));
    else if (key == "max_age_seconds")
      w.max_age_seconds = value.is_null()
                              ? std::nullopt
                              : std::optional(positive(value, "max_age_seconds", context_window_limits::max_age_seconds));
    else
      bad("config.context has no field '" + std::string(key) + "' (max_events, max_age_seconds)");
  }
  return w;
}

std::vector<message_record> bound_conversation(const std::vector<message_record>& messages, const context_window& window,
                                               std::int64_t now_ms) {
  if (!window.bounded() || messages.empty()) return messages;
  const auto units = units_of(messages);
  const std::int64_t cutoff = window.max_age_seconds ? now_ms - *window.max_age_seconds * 1000 : 0;
  std::size_t from = units.size();  // the first kept unit
  std::int64_t kept = 0;
  for (std::size_t u = units.size(); u-- > 0;) {
    const auto [first, last] = units[u];
    const auto size = static_cast<std::int64_t>(last - first);
    std::int64_t newest = 0;
    for (std::size_t i = first; i < last; ++i) newest = std::max(newest, messages[i].created_at_ms);
    const bool fits = (!window.max_events || kept + size <= *window.max_events) && (!window.max_age_seconds || newest >= cutoff);
    if (!fits && u + 1 < units.size()) break;  // the newest unit stays whatever its size or age
    kept += size;
    from = u;
    if (!fits) break;
  }
  const std::size_t start = units[from].first;
  std::vector<message_record> out;
  auto first_user = std::find_if(messages.begin(), messages.end(), [](const auto& m) { return m.role == "user"; });
  if (first_user != messages.end() && static_cast<std::size_t>(first_user - messages.begin()) < start) out.push_back(*first_user);
  out.insert(out.end(), messages.begin() + static_cast<std::ptrdiff_t>(start), messages.end());
  return out;
}

}  // namespace agw::core
