#pragma once
// How a store keeps a thread's checkpoints so that a version costs what it adds:
// rows of two kinds, a whole-state snapshot and the deltas written after it; the
// newest state is the newest snapshot with its following deltas applied in order.
//
// A delta becomes a new snapshot (and every older row of the thread is dropped)
// once the deltas since the last snapshot, this one included, hold as many bytes
// as that snapshot. So snapshots grow geometrically (each at least about twice
// the one before when a conversation only grows), a delta's bytes are written
// again in O(1) later snapshots (amortised, a version costs O(what it adds)), and
// reading the newest state reads at most about twice the snapshot.
// docs/checkpoints.md says why this rule and not every N versions.
//
// Store-agnostic: sqlite_store and the tests' fake keep the same rows with these.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/checkpoint.hpp"
#include "core/checkpoint_delta.hpp"

namespace agw::core {

// A thread's newest row, as far as the snapshot rule cares.
struct checkpoint_tip {
  std::int64_t version = 0;
  std::int64_t message_count = -1;  // its conversation's (-1: unknown, a whole state stored as given)
  std::int64_t delta_bytes = 0;     // bytes of the deltas since the chain's snapshot (0 on the snapshot)
  std::int64_t snapshot_bytes = 0;  // the chain's snapshot's size
};

// What a store writes for one version.
struct checkpoint_row {
  bool snapshot = false;
  std::int64_t message_count = -1;
  std::string text;  // serialize_checkpoint's form for a snapshot, serialize_delta's for a delta
  std::int64_t delta_bytes = 0;
  std::int64_t snapshot_bytes = 0;
};

// Deltas since the last snapshot (the next one included) hold as many bytes as it.
bool snapshot_due(std::int64_t delta_bytes, std::int64_t snapshot_bytes);

// The row that stores `d` on top of the thread's newest row: a delta, or, for a
// thread's first version or when a snapshot is due, the snapshot of newest_state()
// with `d` applied (the store then drops the rows below it). Throws store_error
// when `d` does not follow the newest version, std::runtime_error when it does not
// fit its conversation (check_delta_fits): a refused delta writes nothing.
checkpoint_row plan_checkpoint_row(const std::optional<checkpoint_tip>& tip, const checkpoint_delta& d,
                                   const std::function<conversation_state()>& newest_state);

// A whole state given as text (insert_checkpoint), stored as it is; `message_count`
// is its conversation's when known.
checkpoint_row snapshot_row(std::string text, std::int64_t message_count = -1);

// The newest state of a chain: its snapshot's text, then its deltas' texts in version order.
conversation_state fold_checkpoints(std::string_view snapshot, const std::vector<std::string>& deltas,
                                    const std::string& session_id);

}  // namespace agw::core
