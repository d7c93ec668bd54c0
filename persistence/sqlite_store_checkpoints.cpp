// sqlite_store's conversation checkpoints: one row per version held, a whole-state
// snapshot or a delta (core/checkpoint_chain.hpp), the newest state being the newest
// snapshot and the deltas after it. The small columns come before `state`, so reading
// a thread's newest row for the snapshot rule never walks a large row's overflow pages.
#include <algorithm>

#include "persistence/sqlite_store.hpp"

namespace agw::persistence {
namespace {

// A thread's rows from its newest snapshot on.
struct chain {
  std::string session_id;
  std::int64_t version = 0;  // the newest row's
  std::int64_t created_at_ms = 0;
  std::string snapshot;
  std::vector<std::string> deltas;  // version order
};

std::optional<chain> read_chain(sqlite_database& db, std::string_view thread_id) {
  // Newest first, down to the first snapshot met: rows below it are never read.
  auto st = db.prepare(
      "SELECT version, kind, session_id, created_at, state FROM checkpoints WHERE thread_id = ? ORDER BY version DESC");
  st.bind(1, thread_id);
  std::optional<chain> out;
  while (st.step()) {
    if (!out) out = chain{st.text(2), st.int64(0), st.int64(3), {}, {}};
    if (st.text(1) == "snapshot") {
      out->snapshot = st.text(4);
      std::reverse(out->deltas.begin(), out->deltas.end());
      return out;
    }
    out->deltas.push_back(st.text(4));
  }
  if (out) throw core::store_error("checkpoints of " + std::string(thread_id) + " have no snapshot");
  return out;
}

std::optional<core::checkpoint_tip> read_tip(sqlite_database& db, std::string_view thread_id) {
  auto st = db.prepare(
      "SELECT version, message_count, delta_bytes, snapshot_bytes FROM checkpoints WHERE thread_id = ? "
      "ORDER BY version DESC LIMIT 1");
  st.bind(1, thread_id);
  if (!st.step()) return std::nullopt;
  return core::checkpoint_tip{st.int64(0), st.int64(1), st.int64(2), st.int64(3)};
}

}  // namespace

void sqlite_store::insert_checkpoint_row(std::string_view thread_id, std::string_view session_id, std::int64_t version,
                                         const core::checkpoint_row& row, std::int64_t created_at_ms) {
  db_.prepare(
         "INSERT INTO checkpoints (thread_id, version, session_id, kind, message_count, delta_bytes, snapshot_bytes, "
         "created_at, state) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")
      .bind(1, thread_id)
      .bind(2, version)
      .bind(3, session_id)
      .bind(4, std::string_view(row.snapshot ? "snapshot" : "delta"))
      .bind(5, row.message_count)
      .bind(6, row.delta_bytes)
      .bind(7, row.snapshot_bytes)
      .bind(8, created_at_ms)
      .bind(9, row.text)
      .run();
}

void sqlite_store::append_checkpoint(const core::checkpoint_delta& d) {
  auto newest_state = [&] {
    auto c = read_chain(db_, d.thread_id);
    return core::fold_checkpoints(c->snapshot, c->deltas, c->session_id);
  };
  const auto row = core::plan_checkpoint_row(read_tip(db_, d.thread_id), d, newest_state);
  insert_checkpoint_row(d.thread_id, d.session_id, d.version, row, d.created_at_ms);
  // A snapshot supersedes every older row.
  if (row.snapshot)
    db_.prepare("DELETE FROM checkpoints WHERE thread_id = ? AND version < ?").bind(1, d.thread_id).bind(2, d.version).run();
}

std::optional<core::stored_conversation> sqlite_store::latest_conversation(std::string_view thread_id) {
  auto c = read_chain(db_, thread_id);
  if (!c) return std::nullopt;
  return core::stored_conversation{c->version, c->created_at_ms, core::fold_checkpoints(c->snapshot, c->deltas, c->session_id)};
}

std::optional<std::int64_t> sqlite_store::latest_checkpoint_version(std::string_view thread_id) {
  // From the (thread_id, version) index alone.
  auto st = db_.prepare("SELECT max(version) FROM checkpoints WHERE thread_id = ?");
  st.bind(1, thread_id);
  st.step();
  return st.optional_int64(0);
}

core::checkpoint_footprint sqlite_store::checkpoint_footprint_of(std::string_view thread_id) {
  core::checkpoint_footprint out;
  auto st = db_.prepare(
      "SELECT count(*), max(version), max(CASE kind WHEN 'snapshot' THEN version END) FROM checkpoints WHERE thread_id = ?");
  st.bind(1, thread_id);
  st.step();
  out.rows = st.int64(0);
  if (out.rows == 0) return out;
  out.newest_version = st.int64(1);
  out.snapshot_version = st.int64(2);
  if (auto tip = read_tip(db_, thread_id)) {
    out.snapshot_bytes = tip->snapshot_bytes;
    out.delta_bytes = tip->delta_bytes;
  }
  return out;
}

void sqlite_store::insert_checkpoint(const core::checkpoint_record& c) {
  insert_checkpoint_row(c.thread_id, c.session_id, c.version, core::snapshot_row(c.state), c.created_at_ms);
}

std::optional<core::checkpoint_record> sqlite_store::latest_checkpoint(std::string_view thread_id) {
  auto c = read_chain(db_, thread_id);
  if (!c) return std::nullopt;
  // A newest snapshot is returned as stored; deltas are applied and the whole state written out.
  std::string state = c->deltas.empty()
                          ? std::move(c->snapshot)
                          : core::serialize_checkpoint(core::fold_checkpoints(c->snapshot, c->deltas, c->session_id));
  return core::checkpoint_record{std::string(thread_id), c->session_id, c->version, std::move(state), c->created_at_ms};
}

}  // namespace agw::persistence
