#pragma once
// What the fake upstream answers to one chat-completions request: chosen by the
// request's "model" ("<scenario>" or "<scenario>:key=value,key=value") or an
// X-Fake-Scenario header spelled the same way. A script is the status line,
// headers and a list of body pieces, each sent after its delay, so tests get
// exact byte boundaries (tool-call fragments cut at awkward places) and pace.
// Pure: the same request (and attempt number) gives the same script.
#include <boost/json/object.hpp>
#include <chrono>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace agw::fake {

struct piece {
  std::chrono::milliseconds delay{0};  // before this piece is written
  std::string bytes;
};

struct script {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::vector<piece> pieces;
  bool finish_http = true;  // false: close without the last chunk (a cut connection)
};

// In a piece, replaced by the CLOCK_MONOTONIC ns at which the piece is written
// (tokens:stamp=1 makes each token "t<ns>;", for the bench's per-token latency).
inline const std::string stamp_marker = "@STAMP@";

struct scenario_name {
  std::string name;
  std::map<std::string, std::string> params;
  long number(const std::string& key, long fallback) const;
};

scenario_name parse_scenario(const std::string& spelled);
// `attempt` counts earlier requests with the same scenario spelling (for fail_times).
script script_for(const scenario_name& scenario, const boost::json::object& request, long attempt);

}  // namespace agw::fake
