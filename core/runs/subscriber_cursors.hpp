#pragma once
// Every subscriber of one session and where each is in the sequence: its cursor,
// the last id handed to it (docs/architecture.md, "Subscribers are cursors").
//
// A live subscriber gets each committed batch as the channel releases it (the
// batch's frames joined once, shared by all). One whose untaken backlog would pass
// `backlog_bound` stops getting them and is asked to say when it has drained
// (subscriber::when_drained); each time it has, it is handed the next page after
// its cursor, from the ring when the ring covers it, otherwise one page read from
// the durable log, until its cursor reaches the last committed id and it is live
// again. Everything runs on the channel's strand, so the seam between catching up
// and live has no gap and no repeat, and a lagging subscriber holds one page.
//
// Executor: the owning channel's strand, for every method and every completion
// (the source defers them there). Not thread-safe.
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "core/events/event_buffer.hpp"
#include "core/events/subscriber.hpp"
#include "core/metrics.hpp"

namespace agw::core {

struct replay_info {
  std::int64_t last_event_id = 0;    // the cursor the client sent
  std::int64_t replayed = 0;         // events sent before live ones
  bool gap = false;                  // the log no longer held some events after the cursor
  std::int64_t oldest_event_id = 0;  // oldest id still held (log or ring)
};

class subscriber_cursors {
 public:
  // What the cursors read from: the session channel, on its strand.
  class source {
   public:
    virtual ~source() = default;
    virtual std::int64_t committed_id() const = 0;
    virtual const event_buffer& ring() const = 0;  // a suffix of the committed events
    virtual std::int64_t oldest_held() const = 0;
    using log_page_handler = std::function<void(std::exception_ptr, std::int64_t log_oldest, std::vector<frame_ptr>)>;
    // Reads up to `limit` events after `after_id` from the durable log; `done` runs on
    // the strand, and not at all once the channel closed.
    virtual void read_log(std::int64_t after_id, std::size_t limit, log_page_handler done) = 0;
    // Runs `step` on the strand later (from any thread), keeping the channel alive till
    // then; not at all once the channel closed.
    virtual void defer(std::function<void()> step) = 0;
    // Keeps the channel (and these cursors, its member) alive while held.
    virtual std::shared_ptr<const void> keep_alive() = 0;
  };

  subscriber_cursors(source& src, metrics& stats, std::size_t page, std::size_t backlog_bound)
      : source_(src), stats_(stats), page_(page), backlog_bound_(backlog_bound) {}

  // Hands `sub` every event after `after_id`, then live ones. `on_replay` hears what
  // the replay holds before its first frame. A subscriber is added at most once
  // (std::logic_error otherwise) until it is removed.
  void add(std::shared_ptr<subscriber> sub, std::int64_t after_id, std::function<void(const replay_info&)> on_replay);
  void remove(const subscriber* sub);
  // A committed batch, to every live subscriber. `skip_seen`: the batch was committed by
  // another node (a cluster), and a cursor may already be past its first ids (a client
  // that saw them there first): each is handed only the ids after its cursor.
  void deliver(const std::vector<frame_ptr>& frames, bool skip_seen = false);
  // The committed sequence jumped past what the live subscribers were handed (another
  // node's events, known only from the log): each of them catches up from where it is.
  void resync();
  // Ends every stream and forgets them (the session is gone).
  void close_all();
  // Asks every stream to end (draining); they leave by themselves.
  void drain_all();
  bool empty() const { return cursors_.empty(); }
  std::size_t size() const { return cursors_.size(); }

 private:
  struct cursor {
    std::shared_ptr<subscriber> sub;
    std::int64_t last_sent = 0;                         // the last id handed to it
    bool live = false;                                  // takes each batch as it commits
    bool gone = false;                                  // removed or closed: pending steps stop
    std::function<void(const replay_info&)> on_replay;  // set until its first step announced the replay
  };
  using cursor_ptr = std::shared_ptr<cursor>;

  // Hands `c` the next page after its cursor, from the ring or (async) the log.
  void catch_up(const cursor_ptr& c);
  void read_log_page(const cursor_ptr& c);
  void on_log_page(const cursor_ptr& c, std::int64_t log_oldest, std::vector<frame_ptr> frames);
  // catch_up(c) once what `c` was handed so far is taken.
  void after_drained(const cursor_ptr& c);
  // Ends `c`'s stream: its sequence cannot go on (close_reason::broken).
  void cut(const cursor_ptr& c);
  // Takes a leaving cursor out of the subscriber gauges.
  void forget(const cursor& c);
  // Throws std::logic_error while the list is being walked (walking_).
  void check_not_walking(const char* what) const;

  source& source_;
  metrics& stats_;
  std::size_t page_;           // events per page handed to one catching up
  std::size_t backlog_bound_;  // untaken frames past which a live subscriber catches up instead
  // The cursors in delivery order (which carries no meaning), and where each
  // subscriber's is: a leaving one takes the last one's place, so that a session
  // followed by thousands lets them go in O(1) each, not O(n) (10,000 closing at
  // once were 5 x 10^7 moves on the channel's strand).
  std::vector<cursor_ptr> cursors_;
  std::unordered_map<const subscriber*, std::size_t> slot_of_;
  // Set while deliver(), resync() or drain_all() walk cursors_: add() and remove() then
  // throw std::logic_error instead of moving cursors under the walk.
  bool walking_ = false;
};

}  // namespace agw::core
