#pragma once
// How a run of consecutive frames is stored in the event log (segment rows and
// journal entries). An SSE frame repeats its framing and the run's id in every
// event ("id: N\nevent: token\ndata: {"run_id":"<36 chars>","content":"..."}");
// stored, a token is its type and what follows the run id, about a quarter of
// the bytes, and decoding rebuilds the exact frame text.
//
// Records, one per line (JSON data never holds a raw newline):
//   r<run_id>              the run of the frames that follow
//   f<type> <rest>         a frame whose data is {"run_id":"<run>"<rest>
//   d<type> <data>         a frame whose data does not start with a run id
//   t<bytes>\n<text>       a frame of any other shape, verbatim
// Ids are not stored: a row's frames are consecutive from its first_id. Every
// encoding names its run before using it, so the concatenation of two encodings
// of consecutive frames is the encoding of all of them. Rows written before this
// encoding (plain frame text, "id: ..." first) still decode.
// Pure functions; decoding throws store_error on a malformed row.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/events/event_frame.hpp"
#include "core/store_records.hpp"

namespace agw::core {

// Appends the encoding of `frames` (consecutive ids) to `out`.
void encode_log_frames(std::span<const frame_ptr> frames, std::string& out);
std::string encode_log_frames(std::span<const frame_ptr> frames);
// The frames of a row whose first frame has id `first_id`, as their SSE text.
std::vector<stored_event> decode_log_frames(std::string_view row, std::int64_t first_id);
// The encoding of the row's frames from id `keep_from` on (retention cutting into a row).
std::string encode_log_suffix(std::string_view row, std::int64_t first_id, std::int64_t keep_from);

}  // namespace agw::core
