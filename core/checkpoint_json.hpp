#pragma once
// The JSON pieces a checkpoint is made of (one message, the run), shared by the
// whole-state form (core/checkpoint.hpp) and the delta form (core/checkpoint_delta.hpp)
// so both spell a message the same way.
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <optional>
#include <string>

#include "core/checkpoint.hpp"

namespace agw::core::checkpoint_json {

// Written into every checkpoint text; a reader refuses any other.
inline constexpr std::int64_t format_version = 1;

// A message as a checkpoint holds it: no session id, no seq (its position says it).
boost::json::object message_to_json(const message_record& m);
// Throws on a missing or mistyped field; seq is left for the caller to set.
message_record message_from_json(const boost::json::object& o, const std::string& session_id);

// The run's state, or null.
boost::json::value run_to_json(const std::optional<checkpoint_run>& run);
std::optional<checkpoint_run> run_from_json(const boost::json::value* v);

// Throws std::runtime_error unless `root` says format_version.
void require_format(const boost::json::object& root);

}  // namespace agw::core::checkpoint_json
