#pragma once
// The offline `agent-gateway rebuild` command.
#include <optional>
#include <string>

#include "persistence/sqlite_store.hpp"

namespace agw::persistence {

// Rebuilds one session's (or every session's) messages projection from its latest
// checkpoint; prints a line per session; returns the process exit code.
int rebuild_offline(sqlite_store& store, const std::optional<std::string>& session_id);

}  // namespace agw::persistence
