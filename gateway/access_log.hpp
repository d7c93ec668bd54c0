#pragma once
// The access line: one info line per request (GATEWAY_ACCESS_LOG), as key=value
// pairs inside the log's message (text, or the "message" of a JSON line). It names
// the path without its query (a query may carry a stream token) and never a header
// or body: no secrets, no message contents.
#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

namespace agw::gateway {

struct access_entry {
  std::string_view request_id;
  std::string_view peer;  // the client's address
  std::string_view method;
  std::string_view target;  // as sent; logged up to its '?'
  unsigned status = 0;
  std::size_t bytes = 0;  // the body written; a stream logs 0 at its start
  bool stream = false;    // an SSE stream began (its line is written when it starts)
  std::chrono::steady_clock::duration took{};
};

// The target up to its query (which may carry a stream token), cut to 256 bytes, with
// every byte outside printable ASCII as '?': what any log line may say of a path.
std::string loggable_path(std::string_view target);

// Writes the line at info when `enabled` (and info is on).
void log_access(bool enabled, const access_entry& entry);

}  // namespace agw::gateway
