#pragma once
// The encoding of one event journal record (and of an event_journal row, which
// versions before the journal files wrote): the batches of several sessions that one
// cycle made durable. Each entry is a header line, then its frames:
//   "<session_id>\n<first_id> <last_id> <created_at_ms> <byte_count> <thread_id_bytes>\n<thread_id><frames>"
// where thread_id is the session's incarnation, so that the start-up fold gives no
// session the events of an earlier one with its id. Rows of older versions have no
// thread id field (four numbers): they decode with an empty one.
// Pure functions; decode throws store_error on a malformed row.
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/store_records.hpp"

namespace agw::persistence {

struct journal_entry {
  core::event_batch_record batch;
  std::string thread_id;  // empty: not known (older rows, tests)
};

std::string encode_journal_entries(std::span<const journal_entry* const> entries);
std::vector<journal_entry> decode_journal_entries(std::string_view entries);

}  // namespace agw::persistence
