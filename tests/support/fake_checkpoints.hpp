#pragma once
// The fake store's checkpoint rows, laid out as sqlite_store lays them out
// (core/checkpoint_chain.hpp): a snapshot or a delta per version held, the newest
// state being the newest snapshot and the deltas after it. Free functions over
// the rows, so fake_data stays plain values (a batch or savepoint is a copy).
#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/checkpoint_chain.hpp"
#include "core/storage/conversation_store.hpp"
#include "core/storage/store_error.hpp"

namespace agw::test {

struct fake_checkpoint_row {
  std::string thread_id;
  std::string session_id;
  std::int64_t version = 0;
  bool snapshot = true;
  std::int64_t message_count = -1;  // -1: not known (a whole state stored as given)
  std::string state;                // the row's text: a whole state (snapshot) or a delta
  std::int64_t delta_bytes = 0;
  std::int64_t snapshot_bytes = 0;
  std::int64_t created_at_ms = 0;
};

namespace fake_checkpoints {

// A thread's rows from its newest snapshot on, newest first.
inline std::vector<const fake_checkpoint_row*> chain(const std::vector<fake_checkpoint_row>& rows, std::string_view thread_id) {
  std::vector<const fake_checkpoint_row*> all;
  for (const auto& r : rows)
    if (r.thread_id == thread_id) all.push_back(&r);
  std::sort(all.begin(), all.end(), [](const auto* a, const auto* b) { return a->version > b->version; });
  auto snapshot = std::find_if(all.begin(), all.end(), [](const auto* r) { return r->snapshot; });
  if (snapshot == all.end()) {
    if (!all.empty()) throw core::store_error("fake: checkpoints without a snapshot");
    return {};
  }
  all.erase(snapshot + 1, all.end());
  return all;
}

inline core::conversation_state fold(const std::vector<const fake_checkpoint_row*>& newest_first) {
  std::vector<std::string> deltas;
  for (auto it = newest_first.rbegin() + 1; it != newest_first.rend(); ++it) deltas.push_back((*it)->state);
  return core::fold_checkpoints(newest_first.back()->state, deltas, newest_first.back()->session_id);
}

inline std::optional<core::checkpoint_tip> tip(const std::vector<fake_checkpoint_row>& rows, std::string_view thread_id) {
  const fake_checkpoint_row* newest = nullptr;
  for (const auto& r : rows)
    if (r.thread_id == thread_id && (!newest || r.version > newest->version)) newest = &r;
  if (!newest) return std::nullopt;
  return core::checkpoint_tip{newest->version, newest->message_count, newest->delta_bytes, newest->snapshot_bytes};
}

// Like SQLite's UNIQUE (thread_id, version).
inline void insert(std::vector<fake_checkpoint_row>& rows, fake_checkpoint_row row) {
  for (const auto& other : rows)
    if (other.thread_id == row.thread_id && other.version == row.version)
      throw core::store_error("fake: UNIQUE constraint failed: checkpoints.thread_id, checkpoints.version");
  rows.push_back(std::move(row));
}

inline void append(std::vector<fake_checkpoint_row>& rows, const core::checkpoint_delta& d) {
  auto newest_state = [&] { return fold(chain(rows, d.thread_id)); };
  auto planned = core::plan_checkpoint_row(tip(rows, d.thread_id), d, newest_state);
  insert(rows, {d.thread_id, d.session_id, d.version, planned.snapshot, planned.message_count, std::move(planned.text),
                planned.delta_bytes, planned.snapshot_bytes, d.created_at_ms});
  // A snapshot supersedes every older row.
  if (planned.snapshot) std::erase_if(rows, [&](const auto& r) { return r.thread_id == d.thread_id && r.version < d.version; });
}

inline std::optional<core::stored_conversation> latest(const std::vector<fake_checkpoint_row>& rows, std::string_view thread_id) {
  auto c = chain(rows, thread_id);
  if (c.empty()) return std::nullopt;
  return core::stored_conversation{c.front()->version, c.front()->created_at_ms, fold(c)};
}

inline std::optional<core::checkpoint_record> latest_text(const std::vector<fake_checkpoint_row>& rows,
                                                          std::string_view thread_id) {
  auto c = chain(rows, thread_id);
  if (c.empty()) return std::nullopt;
  // A newest snapshot is returned as stored; deltas are applied and the whole state written out.
  auto state = c.size() == 1 ? c.front()->state : core::serialize_checkpoint(fold(c));
  return core::checkpoint_record{std::string(thread_id), c.front()->session_id, c.front()->version, std::move(state),
                                 c.front()->created_at_ms};
}

inline core::checkpoint_footprint footprint(const std::vector<fake_checkpoint_row>& rows, std::string_view thread_id) {
  core::checkpoint_footprint out;
  for (const auto& r : rows) {
    if (r.thread_id != thread_id) continue;
    ++out.rows;
    out.newest_version = std::max(out.newest_version, r.version);
    if (r.snapshot) out.snapshot_version = std::max(out.snapshot_version, r.version);
  }
  if (auto t = tip(rows, thread_id)) {
    out.snapshot_bytes = t->snapshot_bytes;
    out.delta_bytes = t->delta_bytes;
  }
  return out;
}

}  // namespace fake_checkpoints
}  // namespace agw::test
