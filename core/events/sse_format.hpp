#pragma once
// The SSE wire format as pure functions (see the contract's "Events and the SSE
// wire format"). data is always one line of JSON: the serializer never emits a
// raw newline, so a frame needs exactly one data: line.
#include <boost/json/object.hpp>
#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "core/events/event_frame.hpp"
#include "core/store_records.hpp"

namespace agw::core {

// A numbered frame: id, event and data lines and the blank line that ends it. The
// data object is {"run_id": run_id, ...data's members in order}; run_id is written
// as it is (a UUID, or empty: nothing JSON would escape).
event_frame make_event_frame(std::int64_t id, std::string_view type, std::string_view run_id, const boost::json::object& data);
// The same for data with one string member, {"run_id": run_id, key: value}, built
// without a JSON object (tokens and statuses: most of a run's events).
event_frame make_event_frame(std::int64_t id, std::string_view type, std::string_view run_id, std::string_view key,
                             std::string_view value);

// "retry: <ms>\n": first line of every stream, deliberately without a blank line of its own.
std::string retry_line(std::chrono::milliseconds interval);

// ": heartbeat\n": a comment, no blank line after it.
std::string_view heartbeat_line();

// The unnumbered frame a resume starts with.
std::string reconnected_frame(std::int64_t last_event_id, std::int64_t replayed, bool gap, std::int64_t oldest_event_id);

}  // namespace agw::core
