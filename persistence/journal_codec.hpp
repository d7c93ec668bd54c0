#pragma once
// The encoding of one event_journal row: the batches of several sessions that
// one writer cycle committed. Each entry is a header line, then its frames:
//   "<session_id>\n<first_id> <last_id> <created_at_ms> <byte_count>\n<frames>"
// Pure functions; decode throws store_error on a malformed row.
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/store_records.hpp"

namespace agw::persistence {

std::string encode_journal_entries(std::span<const core::event_batch_record* const> batches);
std::vector<core::event_batch_record> decode_journal_entries(std::string_view entries);

}  // namespace agw::persistence
