#pragma once
// The event use cases that are not a stream of their own: the session's
// channel for a stream to subscribe to (looked up, so an unknown session is a
// 404 before any stream starts), and reading after a cursor for clients that
// cannot hold a stream open (the long poll: waits for the first event when
// there is none yet).
//
// Executor: awaitables on the caller's executor; channel work hops to the
// channel's strand and back. No mutable state of its own. The long poll's
// wait is on the injected clock.
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/events/event_frame.hpp"

namespace agw::core {

class clock;
class session_channel;
class session_hub;
class session_service;

class event_service {
 public:
  event_service(session_service& sessions, session_hub& hub, const clock& time);

  // The session's channel (created with its stored last event id on first use);
  // api_error(not_found) when there is no such session, here and below.
  boost::asio::awaitable<std::shared_ptr<session_channel>> channel(std::string session_id);

  // Committed events after `after_id`, at most `limit`, from memory or the log. When
  // there is none yet, waits up to `wait` for the first (then reads again).
  boost::asio::awaitable<std::vector<frame_ptr>> read_after(std::string session_id, std::int64_t after_id, std::size_t limit,
                                                            std::chrono::duration<double> wait);

 private:
  session_service& sessions_;
  session_hub& hub_;
  const clock& clock_;
};

}  // namespace agw::core
