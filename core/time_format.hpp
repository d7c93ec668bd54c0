#pragma once
// Timestamps are stored as milliseconds since the Unix epoch and shown as RFC 3339 UTC.
#include <cstdint>
#include <string>

namespace agw::core {

std::int64_t now_ms();
// "2026-03-21T12:34:56.123Z"
std::string format_rfc3339_ms(std::int64_t epoch_ms);

}  // namespace agw::core
