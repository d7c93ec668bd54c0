#pragma once
// The per-thread checkpoint: the authoritative conversation (every message,
// with tool calls and results, in order) and the state of the latest run.
// Stored as JSON text; the messages table is derived from it.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/store_records.hpp"

namespace agw::core {

struct checkpoint_run {
  std::string id;
  std::string state;  // running | completed | aborted | error | interrupted
  std::string user_message_id;
  std::int64_t started_at_ms = 0;
  std::optional<std::int64_t> ended_at_ms;
  std::int64_t events_before = 0;           // the session's last event id when the run began
  std::optional<std::string> callback_url;  // where the run's end is reported (kept so a crash still reports it)
};

struct conversation_state {
  std::vector<message_record> messages;  // oldest first; seq = index + 1
  std::optional<checkpoint_run> run;

  // What is derived from the messages of earlier runs, which never change again: kept with
  // the conversation (between runs it waits in the conversation cache) so that a long one
  // is not read whole at every run. Each figure covers a prefix of the messages; reset
  // whenever the conversation is read from storage. Not part of the checkpoint.
  struct prefix_tally {
    std::size_t counted = 0;
    std::int64_t words = 0;  // the mock agent's input tokens
    std::size_t sized = 0;
    std::size_t bytes = 0;  // the conversation cache's estimate of messages [0, sized)
  };
  mutable prefix_tally tally;
};

std::string serialize_checkpoint(const conversation_state& state);
// Throws std::runtime_error on a checkpoint this build cannot read.
conversation_state parse_checkpoint(std::string_view text, const std::string& session_id);

// The message's source, or its role's default when it was stored without one.
std::string_view message_source(const message_record& m);

// The API's Message object.
boost::json::object message_json(const message_record& m);

}  // namespace agw::core
