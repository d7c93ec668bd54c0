#pragma once
// Port: each thread's conversation: the checkpoints (authoritative, versioned)
// and the messages projection derived from them (core/projection.hpp keeps the
// two together). Used on a store connection's thread only; throws store_error.
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "core/store_records.hpp"

namespace agw::core {

class conversation_store {
 public:
  virtual ~conversation_store() = default;
  virtual void insert_checkpoint(const checkpoint_record& c) = 0;
  virtual std::optional<checkpoint_record> latest_checkpoint(std::string_view thread_id) = 0;

  virtual message_page list_messages(std::string_view session_id, std::int64_t limit, std::int64_t offset) = 0;
  virtual std::vector<message_record> all_messages(std::string_view session_id) = 0;  // oldest first
  virtual void upsert_message(const message_record& m) = 0;
  virtual void delete_messages(std::string_view session_id) = 0;
};

}  // namespace agw::core
