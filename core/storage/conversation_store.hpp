#pragma once
// Port: each thread's conversation: the checkpoints (authoritative, versioned)
// and the messages projection derived from them (core/projection.hpp keeps the
// two together). Used on a store connection's thread only; throws store_error.
//
// A version is written as what it adds (append_checkpoint); the store keeps the
// newest whole state readable however it lays versions out, and what it holds for
// a thread stays within a constant factor of that state (core/checkpoint_chain.hpp:
// deltas after a snapshot, folded into a new snapshot now and then, older rows dropped).
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "core/checkpoint.hpp"
#include "core/checkpoint_delta.hpp"
#include "core/store_records.hpp"

namespace agw::core {

// A thread's newest version, whole.
struct stored_conversation {
  std::int64_t version = 0;
  std::int64_t created_at_ms = 0;  // when that version was written
  conversation_state state;        // messages carry their session id and seq
};

// What a store holds of a thread's checkpoints (operations, tests).
struct checkpoint_footprint {
  std::int64_t rows = 0;  // versions held (0: none)
  std::int64_t newest_version = 0;
  std::int64_t snapshot_version = 0;  // the newest whole-state row's
  std::int64_t snapshot_bytes = 0;    // its size
  std::int64_t delta_bytes = 0;       // the deltas' after it
};

class conversation_store {
 public:
  virtual ~conversation_store() = default;
  // Writes version d.version: what it adds to the newest version (which it must follow
  // by one; a thread's first version may be any). Refused (store_error) out of order,
  // for an unknown session, or over a newest state this build cannot read.
  virtual void append_checkpoint(const checkpoint_delta& d) = 0;
  // The newest version's whole conversation. nullopt: the thread has none.
  virtual std::optional<stored_conversation> latest_conversation(std::string_view thread_id) = 0;
  // The newest version's number alone, without reading the conversation (cheap).
  virtual std::optional<std::int64_t> latest_checkpoint_version(std::string_view thread_id) = 0;
  virtual checkpoint_footprint checkpoint_footprint_of(std::string_view thread_id) = 0;

  // A whole state given as text, stored as is at any version not yet taken (the
  // newest version wins), e.g. by tools; readable by latest_checkpoint only.
  virtual void insert_checkpoint(const checkpoint_record& c) = 0;
  // The newest version as a whole state in text form (serialize_checkpoint's).
  virtual std::optional<checkpoint_record> latest_checkpoint(std::string_view thread_id) = 0;

  virtual message_page list_messages(std::string_view session_id, std::int64_t limit, std::int64_t offset) = 0;
  virtual std::vector<message_record> all_messages(std::string_view session_id) = 0;  // oldest first
  virtual void upsert_message(const message_record& m) = 0;
  virtual void delete_messages(std::string_view session_id) = 0;
};

}  // namespace agw::core
