#pragma once
// What the fake upstream saw, for tests to ask for over GET /_log: every
// chat-completions request (its body and Authorization header) and how each
// stream ended ("complete", or "disconnect" when the client hung up first),
// with the monotonic time (CLOCK_MONOTONIC ns, comparable with the test
// process's steady_clock). Single-threaded: the fake runs one io thread.
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <chrono>
#include <map>
#include <string>

namespace agw::fake {

class journal {
 public:
  // Returns how many requests with this scenario spelling came before.
  long record_request(const std::string& scenario, const std::string& authorization, const std::string& body);
  void record_end(const std::string& scenario, const std::string& kind);
  boost::json::object to_json() const;

 private:
  boost::json::array requests_;
  boost::json::array ends_;
  std::map<std::string, long> attempts_;
};

inline long long monotonic_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace agw::fake
