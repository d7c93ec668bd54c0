#pragma once
// Port: how the live pipeline makes a session's events durable. A channel hands
// each batch of consecutive events here and releases them to clients only when
// `done` reports them committed. How a store lays the events out (SQLite: a
// shared journal, then per-session segments) is the store's business.
//
// Thread-safety: append() may be called from any thread; a session has at most
// one batch in flight (the channel waits for `done` before its next batch).
#include <boost/asio/any_io_executor.hpp>
#include <cstddef>
#include <exception>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/events/event_frame.hpp"

namespace agw::core {

class event_log_writer {
 public:
  struct batch {
    std::string session_id;
    std::vector<frame_ptr> events;                 // consecutive ids, at least one
    bool ends_run = false;                         // a run's done is among them
    std::size_t retention = 0;                     // events the session keeps in its log (0 = all)
    boost::asio::any_io_executor executor;         // where `done` runs (the channel's strand)
    std::function<void(std::exception_ptr)> done;  // after the commit, or with the error (then retry)
  };

  virtual ~event_log_writer() = default;
  virtual void append(batch b) = 0;
  // The session was deleted: whatever is held for it goes.
  virtual void forget(std::string_view session_id) = 0;
};

}  // namespace agw::core
