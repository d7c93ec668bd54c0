#pragma once
// How a run of consecutive events is stored in the event log (segment rows and
// journal entries): made from the events' records, not from their SSE text.
// An SSE frame repeats its framing and the run's id in every event ("id: N\nevent:
// token\ndata: {"run_id":"<36 chars>","content":"..."}"); stored, a token is its
// type and what follows the run id, about a quarter of the bytes.
//
// Records, one per line (JSON data never holds a raw newline):
//   r<run_id>[ <source>]   the run of the events that follow, and their source
//                          (none named: ai_agent, as every row from before sources)
//   f<type> <rest>         an event whose data is {"run_id":"<run>","source":"<source>"<rest>
//   d<type> <data>         an event whose data carries no run id
//   t<bytes>\n<text>       legacy: a frame's SSE text verbatim (no longer written)
// Ids are not stored: a row's events are consecutive from its first_id. Every
// encoding names its run before using it, so the concatenation of two encodings
// of consecutive events is the encoding of all of them. Rows written before this
// encoding (plain SSE text, "id: ..." first) and `t` records still decode: those
// are the only SSE text ever parsed, and only to rebuild the records.
// Pure functions; decoding throws store_error on a malformed row.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/events/event_frame.hpp"

namespace agw::core {

// Appends the encoding of `frames` (consecutive ids) to `out`.
void encode_log_frames(std::span<const frame_ptr> frames, std::string& out);
std::string encode_log_frames(std::span<const frame_ptr> frames);
// The events of a row whose first event has id `first_id`.
std::vector<frame_ptr> decode_log_frames(std::string_view row, std::int64_t first_id);
// The encoding of the row's events from id `keep_from` on (retention cutting into a row).
std::string encode_log_suffix(std::string_view row, std::int64_t first_id, std::int64_t keep_from);

}  // namespace agw::core
