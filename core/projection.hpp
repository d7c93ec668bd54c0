#pragma once
// The messages table as a projection of the latest checkpoint.
#include <cstdint>
#include <optional>
#include <string>

#include "core/checkpoint.hpp"
#include "core/checkpoint_delta.hpp"
#include "core/clock.hpp"
#include "core/storage/store_connection.hpp"

namespace agw::core {

// Writes a checkpoint version as what it adds (its delta) and projects the delta's
// messages; call inside one write job, so both land together. The checkpoint is
// stamped with `time`'s wall clock when the job runs.
void save_checkpoint(store_connection& c, const clock& time, checkpoint_delta delta);

// The same from a whole conversation whose messages before index `changed_from` are
// unchanged since the previous version (only the rest is written).
void save_checkpoint(store_connection& c, const clock& time, const session_record& s, std::int64_t version,
                     const conversation_state& state, std::size_t changed_from = 0);

// Replaces the session's messages with those of its latest checkpoint. Runs
// inside the caller's transaction. nullopt: no such session.
std::optional<std::int64_t> rebuild_projection(store_connection& c, const std::string& session_id);

// True when the projection differs from the latest checkpoint (start-up drift check).
bool projection_drifted(store_connection& c, const session_record& s);

}  // namespace agw::core
