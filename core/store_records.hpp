#pragma once
// Plain rows that cross the store interface.
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace agw::core {

struct message_record {
  std::string id;
  std::string session_id;
  std::int64_t seq = 0;  // position in the conversation, 1-based
  std::string role;      // user | assistant | system | tool
  std::string content;
  boost::json::array tool_calls;  // [{"id","name","args"}]
  std::optional<std::string> tool_call_id;
  std::optional<std::int64_t> token_count;
  std::optional<std::string> model_used;
  std::optional<std::string> parent_id;
  std::string status = "complete";  // complete | aborted | error | interrupted
  std::int64_t created_at_ms = 0;
};

struct message_page {
  std::vector<message_record> messages;
  std::int64_t total = 0;
};

struct checkpoint_record {
  std::string thread_id;
  std::string session_id;
  std::int64_t version = 0;
  std::string state;  // JSON text: {"messages": [...], "run": {...}}
  std::int64_t created_at_ms = 0;
};

struct stored_event {
  std::int64_t id = 0;
  std::string frame;  // the complete SSE frame as sent
};

struct event_batch_record {
  std::string session_id;
  std::int64_t first_id = 0;
  std::int64_t last_id = 0;
  std::string frames;  // concatenated SSE frames, ids first_id..last_id
  std::int64_t created_at_ms = 0;
};

struct idempotency_record {
  std::string session_id;
  std::string key;
  std::string content_hash;
  std::string run_id;
  std::int64_t first_event_id = 0;  // events of that run start after this id
  std::int64_t created_at_ms = 0;
};

}  // namespace agw::core
