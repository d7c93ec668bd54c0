#pragma once
// GATEWAY_LOG_FORMAT=json: every log line one JSON object. spdlog's pattern puts the
// message in a JSON string; the "%*" flag this adds writes it escaped, so a quote or
// a control character in a message (an error's text, a client's path) cannot break
// the line or forge a field.
#include <spdlog/pattern_formatter.h>

#include <memory>

namespace agw::gateway {

// {"time","level","thread","message"} lines, times in UTC.
std::unique_ptr<spdlog::formatter> make_json_log_formatter();

// The JSON string escaping used for the message (without the quotes).
void append_json_escaped(std::string_view text, spdlog::memory_buf_t& out);

}  // namespace agw::gateway
