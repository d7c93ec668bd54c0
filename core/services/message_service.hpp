#pragma once
// The messages projection's use cases: a page of a session's messages, and
// rebuilding the projection from the session's latest checkpoint. Owns their
// storage access.
//
// Executor: awaitables on the caller's executor; no mutable state.
#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <string>

#include "core/store_records.hpp"

namespace agw::core {

class session_service;
class store_executor;

struct message_list {
  message_page page;  // newest first
  bool has_more = false;
};

class message_service {
 public:
  message_service(store_executor& store, session_service& sessions);

  // api_error(not_found) when there is no such session, here and below.
  boost::asio::awaitable<message_list> list(std::string session_id, std::int64_t limit, std::int64_t offset);
  // The number of messages the rebuilt projection holds.
  boost::asio::awaitable<std::int64_t> rebuild(std::string session_id);

 private:
  store_executor& store_;
  session_service& sessions_;
};

}  // namespace agw::core
