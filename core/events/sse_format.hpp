#pragma once
// The SSE wire format as pure functions (see the contract's "Events and the SSE
// wire format"): builds an event's record and SSE encoding together. data is
// always one line of JSON: the serializer never emits a raw newline, so a frame
// needs exactly one data: line.
#include <boost/json/object.hpp>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/events/event_frame.hpp"
#include "core/events/event_source.hpp"
#include "core/store_records.hpp"

namespace agw::core {

// A numbered frame: id, event and data lines and the blank line that ends it. The
// data object is {"run_id": run_id, "source": source, ...data's members in order};
// run_id is written as it is (a UUID, or empty: nothing JSON would escape). A run's
// events are its agent's unless said otherwise (docs/timeline.md, "Sources").
event_frame make_event_frame(std::int64_t id, event_type type, std::string_view run_id, const boost::json::object& data,
                             event_source source = event_source::ai_agent);
// The same for data with one string member, {"run_id": run_id, "source": source, key: value},
// built without a JSON object (tokens and statuses: most of a run's events).
event_frame make_event_frame(std::int64_t id, event_type type, std::string_view run_id, std::string_view key,
                             std::string_view value, event_source source = event_source::ai_agent);
// The same from the data's serialized members: `rest` is what follows the source's
// closing quote, from "," or "}" to the end of the object (how the log stores it).
event_frame make_event_frame_after_run(std::int64_t id, event_type type, std::string_view run_id, std::string_view source,
                                       std::string_view rest);
// A run event's data split at the lead the builders above write,
// {"run_id":"<run>","source":"<source>"<rest>: `rest` runs from the "," or "}" after the
// source's closing quote to the end of the object. Data from before sources has no
// source member: `source` is then none and `rest` follows the run id's closing quote.
// Nothing when the data does not start with the run_id member, or a quote is unclosed.
// The one reader of this lead: the log codec and members_after_run_lead split with it.
struct run_lead_split {
  std::string_view run;
  std::optional<std::string_view> source;  // none: no source member (the agent's, by the contract)
  std::string_view rest;
};
std::optional<run_lead_split> split_run_lead(std::string_view data);
// The same for a frame: one with a run id was built here with the lead, and its layout
// says where the run id is, so only the source is left to find (the journal splits
// every event). A frame without a run id is split by its data.
std::optional<run_lead_split> split_run_lead(const event_frame& frame);
// The members after that lead in a run event's data, as the builders above wrote them
// (its run id the frame's, a source member present). Empty for data with another lead
// (no run id, or a row from before sources).
std::string_view members_after_run_lead(const event_frame& frame);
// An event whose data carries no run id: `data` is the whole JSON object, one line.
event_frame make_event_frame_with_data(std::int64_t id, event_type type, std::string_view data);

// "retry: <ms>\n": first line of every stream, deliberately without a blank line of its own.
std::string retry_line(std::chrono::milliseconds interval);

// ": heartbeat\n": a comment, no blank line after it.
std::string_view heartbeat_line();

// The unnumbered frame a resume starts with: its text, and the frame (id -1) a stream queues.
std::string reconnected_frame(std::int64_t last_event_id, std::int64_t replayed, bool gap, std::int64_t oldest_event_id);
event_frame make_reconnected_frame(std::int64_t last_event_id, std::int64_t replayed, bool gap, std::int64_t oldest_event_id);

}  // namespace agw::core
