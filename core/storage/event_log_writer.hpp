#pragma once
// Port: how the live pipeline makes a session's events durable. A channel hands
// each batch of consecutive events here and releases them to clients only when
// `done` reports them committed. How a store lays the events out (SQLite: a
// shared journal, then per-session segments) is the store's business.
//
// A channel opens its session's log once and appends through it: a paced run
// appends one event at a time, and finding the session's state by id on every
// append was a measurable share of its cost.
//
// Thread-safety: open(), forget(), retire() and a session log's append() may be
// called from any thread; a session has at most one batch in flight (the channel
// waits for `done` before its next batch).
#include <boost/asio/any_io_executor.hpp>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/events/event_frame.hpp"

namespace agw::core {

class event_log_writer {
 public:
  struct batch {
    std::vector<frame_ptr> events;                 // consecutive ids, at least one
    bool ends_run = false;                         // a run's done is among them
    std::size_t retention = 0;                     // events the session keeps in its log (0 = all)
    boost::asio::any_io_executor executor;         // where `done` runs (the channel's strand)
    std::function<void(std::exception_ptr)> done;  // after the commit, or with the error (then retry)
    // The run's lease token (core/storage/run_leases.hpp): written only while it holds the
    // session's lease, else `done` gets a fenced_out. 0: unfenced (events of no run, SQLite).
    std::int64_t fence = 0;
  };

  // One session's way in. Every open() of one session id returns the same state
  // until forget() or retire(). `thread_id` names the session's incarnation (a session
  // made again with its id has another): a store that keeps events apart from the
  // session's rows tells them apart by it (empty: any).
  class session_log {
   public:
    virtual ~session_log() = default;
    virtual void append(batch b) = 0;
  };

  virtual ~event_log_writer() = default;
  virtual std::shared_ptr<session_log> open(const std::string& session_id, const std::string& thread_id) = 0;
  // The session was deleted: whatever is held for it goes (a log opened before appends
  // nothing more that lasts).
  virtual void forget(std::string_view session_id) = 0;
  // The session's channel is going because it is idle (session_hub's eviction), and
  // what is held for it may go too: true when nothing of it is on its way to the store
  // or kept in memory alone (events the store has not yet put where a read of the
  // session's last id finds them); then the next open() starts afresh. False: it is
  // kept, and so must the channel be (a new one would not know those events' ids); a
  // store may then hurry those events to where that read finds them, so that a later try
  // succeeds. The caller promises that the log it opened appends nothing more.
  virtual bool retire(std::string_view session_id) = 0;
};

}  // namespace agw::core
