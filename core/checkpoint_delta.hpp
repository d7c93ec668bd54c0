#pragma once
// What one checkpoint version adds to the one before it: the messages appended or
// changed since (each at its position), how many messages the conversation now
// has, and the run's state. A run writes this, not the whole conversation, so a
// checkpoint costs what the turn adds; the store folds deltas into whole-state
// snapshots now and then (core/checkpoint_chain.hpp).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/checkpoint.hpp"
#include "core/session.hpp"

namespace agw::core {

struct checkpoint_delta {
  std::string thread_id;
  std::string session_id;
  std::int64_t version = 0;              // the previous version + 1 (a thread's first may be any)
  std::int64_t message_count = 0;        // messages in this version's conversation
  std::vector<message_record> messages;  // appended or changed since the previous version; each at its seq (1-based)
  std::optional<checkpoint_run> run;     // this version's run, whole (it is small)
  std::int64_t created_at_ms = 0;
  // This version's whole conversation, when the writer has it in memory (a run's own
  // state; not owned: it must outlive the append_checkpoint call the delta is for).
  // A snapshot that falls due is then written from it, instead of the store reading
  // and folding the whole chain first, which stalled the writer for every session
  // (tens of ms on a 10,000-message conversation). Not stored.
  const conversation_state* whole_state = nullptr;
};

// The delta from a conversation whose messages before `changed_from` are unchanged to
// `state` (whole_state left unset: the caller knows how long `state` lives).
checkpoint_delta make_checkpoint_delta(const session_record& s, std::int64_t version, const conversation_state& state,
                                       std::size_t changed_from);

// The delta's stored text (thread, session, version and time are the store's columns).
std::string serialize_delta(const checkpoint_delta& d);
// Throws std::runtime_error (or Boost.JSON's errors) on a text this build cannot read.
checkpoint_delta parse_delta(std::string_view text, const std::string& session_id);

// Throws std::runtime_error unless `d` fits a conversation of `previous_count` messages:
// its messages in seq order, each once, inside its count, every new position filled.
void check_delta_fits(const checkpoint_delta& d, std::int64_t previous_count);

// Turns the previous version's state into this one's (check_delta_fits first).
void apply_delta(conversation_state& state, checkpoint_delta d);

}  // namespace agw::core
