// pg_store's conversation checkpoints: one row per version held, a whole-state
// snapshot or a delta (core/checkpoint_chain.hpp), as SQLite lays them out
// (persistence/sqlite_store_checkpoints.cpp).
#include <algorithm>

#include "core/checkpoint_chain.hpp"
#include "core/storage/store_error.hpp"
#include "persistence/postgres/pg_store.hpp"

namespace agw::persistence::pg {
namespace {

// A thread's rows from its newest snapshot on.
struct chain {
  std::string session_id;
  std::int64_t version = 0;  // the newest row's
  std::int64_t created_at_ms = 0;
  std::string snapshot;
  std::vector<std::string> deltas;  // version order
};

std::optional<chain> read_chain(connection& db, std::string_view thread_id) {
  // The rows from the newest snapshot on, and nothing below it.
  auto r = db.run(
      "SELECT version, kind, session_id, created_at, state FROM checkpoints WHERE thread_id = $1 AND version >= "
      "COALESCE((SELECT max(version) FROM checkpoints WHERE thread_id = $1 AND kind = 'snapshot'), 0) ORDER BY version DESC",
      params().add(thread_id));
  std::optional<chain> out;
  for (int i = 0; i < r.rows(); ++i) {
    if (!out) out = chain{r.text(i, 2), r.int64(i, 0), r.int64(i, 3), {}, {}};
    if (r.text(i, 1) == "snapshot") {
      out->snapshot = r.text(i, 4);
      std::reverse(out->deltas.begin(), out->deltas.end());
      return out;
    }
    out->deltas.push_back(r.text(i, 4));
  }
  if (out) throw core::store_error("checkpoints of " + std::string(thread_id) + " have no snapshot");
  return out;
}

std::optional<core::checkpoint_tip> read_tip(connection& db, std::string_view thread_id) {
  auto r = db.run(
      "SELECT version, message_count, delta_bytes, snapshot_bytes FROM checkpoints WHERE thread_id = $1 "
      "ORDER BY version DESC LIMIT 1",
      params().add(thread_id));
  if (r.rows() == 0) return std::nullopt;
  return core::checkpoint_tip{r.int64(0, 0), r.int64(0, 1), r.int64(0, 2), r.int64(0, 3)};
}

}  // namespace

void pg_store::insert_checkpoint_row(std::string_view thread_id, std::string_view session_id, std::int64_t version, bool snapshot,
                                     std::int64_t message_count, std::int64_t delta_bytes, std::int64_t snapshot_bytes,
                                     const std::string& text, std::int64_t created_at_ms) {
  db_.run(
      "INSERT INTO checkpoints (thread_id, version, session_id, kind, message_count, delta_bytes, snapshot_bytes, "
      "created_at, state) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
      params()
          .add(thread_id)
          .add(version)
          .add(session_id)
          .add(snapshot ? "snapshot" : "delta")
          .add(message_count)
          .add(delta_bytes)
          .add(snapshot_bytes)
          .add(created_at_ms)
          .add(text));
}

void pg_store::append_checkpoint(const core::checkpoint_delta& d) {
  auto newest_state = [&] {
    auto c = read_chain(db_, d.thread_id);
    return core::fold_checkpoints(c->snapshot, c->deltas, c->session_id);
  };
  const auto row = core::plan_checkpoint_row(read_tip(db_, d.thread_id), d, newest_state);
  insert_checkpoint_row(d.thread_id, d.session_id, d.version, row.snapshot, row.message_count, row.delta_bytes,
                        row.snapshot_bytes, row.text, d.created_at_ms);
  // A snapshot supersedes every older row.
  if (row.snapshot)
    db_.run("DELETE FROM checkpoints WHERE thread_id = $1 AND version < $2", params().add(d.thread_id).add(d.version));
}

std::optional<core::stored_conversation> pg_store::latest_conversation(std::string_view thread_id) {
  auto c = read_chain(db_, thread_id);
  if (!c) return std::nullopt;
  return core::stored_conversation{c->version, c->created_at_ms, core::fold_checkpoints(c->snapshot, c->deltas, c->session_id)};
}

std::optional<std::int64_t> pg_store::latest_checkpoint_version(std::string_view thread_id) {
  auto r = db_.run("SELECT max(version) FROM checkpoints WHERE thread_id = $1", params().add(thread_id));
  return r.optional_int64(0, 0);
}

core::checkpoint_footprint pg_store::checkpoint_footprint_of(std::string_view thread_id) {
  core::checkpoint_footprint out;
  auto r = db_.run(
      "SELECT count(*), max(version), max(CASE kind WHEN 'snapshot' THEN version END) FROM checkpoints WHERE thread_id = $1",
      params().add(thread_id));
  out.rows = r.int64(0, 0);
  if (out.rows == 0) return out;
  out.newest_version = r.int64(0, 1);
  out.snapshot_version = r.optional_int64(0, 2).value_or(0);
  if (auto tip = read_tip(db_, thread_id)) {
    out.snapshot_bytes = tip->snapshot_bytes;
    out.delta_bytes = tip->delta_bytes;
  }
  return out;
}

void pg_store::insert_checkpoint(const core::checkpoint_record& c) {
  const auto row = core::snapshot_row(c.state);
  insert_checkpoint_row(c.thread_id, c.session_id, c.version, row.snapshot, row.message_count, row.delta_bytes,
                        row.snapshot_bytes, row.text, c.created_at_ms);
}

std::optional<core::checkpoint_record> pg_store::latest_checkpoint(std::string_view thread_id) {
  auto c = read_chain(db_, thread_id);
  if (!c) return std::nullopt;
  // A newest snapshot is returned as stored; deltas are applied and the whole state written out.
  std::string state = c->deltas.empty()
                          ? std::move(c->snapshot)
                          : core::serialize_checkpoint(core::fold_checkpoints(c->snapshot, c->deltas, c->session_id));
  return core::checkpoint_record{std::string(thread_id), c->session_id, c->version, std::move(state), c->created_at_ms};
}

}  // namespace agw::persistence::pg
