#include "core/runs/subscriber_cursors.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

namespace agw::core {

namespace {

// Marks the list as being walked: a subscriber called from the walk must not join or
// leave synchronously (subscriber.hpp), since a leaving cursor takes another's place.
class walking_list {
 public:
  explicit walking_list(bool& flag) : flag_(flag) { flag_ = true; }
  ~walking_list() { flag_ = false; }
  walking_list(const walking_list&) = delete;
  walking_list& operator=(const walking_list&) = delete;

 private:
  bool& flag_;
};

}  // namespace

void subscriber_cursors::check_not_walking(const char* what) const {
  if (walking_) throw std::logic_error(std::string("subscriber_cursors::") + what + " from a subscriber called during a walk");
}

void subscriber_cursors::add(std::shared_ptr<subscriber> sub, std::int64_t after_id,
                             std::function<void(const replay_info&)> on_replay) {
  check_not_walking("add");
  if (slot_of_.contains(sub.get())) throw std::logic_error("subscriber_cursors::add: the subscriber is already here");
  auto c = std::make_shared<cursor>();
  c->sub = std::move(sub);
  c->last_sent = after_id;
  c->on_replay = std::move(on_replay);
  cursors_.push_back(c);
  try {
    slot_of_.emplace(c->sub.get(), cursors_.size() - 1);
  } catch (...) {
    cursors_.pop_back();  // the list and its index stay in step
    throw;
  }
  stats_.subscribers_open++;
  stats_.subscribers_catching_up++;  // until catch_up finds it level with the log
  catch_up(c);
}

void subscriber_cursors::forget(const cursor& c) {
  stats_.subscribers_open--;
  if (!c.live) stats_.subscribers_catching_up--;
}

void subscriber_cursors::remove(const subscriber* sub) {
  check_not_walking("remove");
  const auto found = slot_of_.find(sub);
  if (found == slot_of_.end()) return;
  const std::size_t slot = found->second;
  slot_of_.erase(found);
  const cursor_ptr leaving = std::move(cursors_[slot]);
  if (slot + 1 != cursors_.size()) {
    cursors_[slot] = std::move(cursors_.back());
    slot_of_[cursors_[slot]->sub.get()] = slot;
  }
  cursors_.pop_back();
  forget(*leaving);
  leaving->gone = true;
}

void subscriber_cursors::deliver(const std::vector<frame_ptr>& frames, bool skip_seen) {
  // No copy of the list: deliver() never calls back into the channel (subscriber.hpp).
  const walking_list walk(walking_);
  frame_batch group;
  for (const auto& c : cursors_) {
    if (!c->live) continue;
    // Behind by more than its bound: stop pushing; it catches up at its own pace
    // (one big batch to an idle writer is fine).
    const std::size_t backlog = c->sub->backlog();
    if (backlog > 0 && backlog + frames.size() > backlog_bound_) {
      c->live = false;
      stats_.sse_subscribers_behind++;
      stats_.subscribers_catching_up++;
      after_drained(c);
      continue;
    }
    if (skip_seen && frames.front()->id <= c->last_sent) {
      // A cursor ahead of what this channel held (the client saw these events on another
      // node first): only what it has not had.
      if (frames.back()->id <= c->last_sent) continue;
      std::vector<frame_ptr> rest;
      for (const auto& f : frames)
        if (f->id > c->last_sent) rest.push_back(f);
      c->last_sent = rest.back()->id;
      c->sub->deliver(make_frame_batch(std::move(rest)));
      continue;
    }
    if (!group) group = make_frame_batch(frames);  // joined once, for all of them
    c->sub->deliver(group);
    c->last_sent = std::max(c->last_sent, frames.back()->id);
  }
}

void subscriber_cursors::resync() {
  const std::int64_t committed = source_.committed_id();
  const walking_list walk(walking_);
  for (const auto& c : cursors_) {
    if (!c->live || c->last_sent >= committed) continue;
    // As if it had fallen behind: pages from the log until it is level again.
    c->live = false;
    stats_.subscribers_catching_up++;
    catch_up(c);
  }
}

void subscriber_cursors::close_all() {
  auto all = std::move(cursors_);
  cursors_.clear();
  slot_of_.clear();
  for (auto& c : all) {
    forget(*c);
    c->gone = true;
    c->sub->close(subscriber::close_reason::session_deleted);
  }
}

void subscriber_cursors::drain_all() {
  // Subscribers that finish with their run stay subscribed and end by themselves.
  const walking_list walk(walking_);
  for (auto& c : cursors_) c->sub->close(subscriber::close_reason::draining);
}

void subscriber_cursors::catch_up(const cursor_ptr& c) {
  if (c->gone) return;
  if (!source_.ring().holds_all_after(c->last_sent, source_.committed_id())) return read_log_page(c);
  auto frames = source_.ring().after(c->last_sent);
  if (!frames.empty()) stats_.replay_reads_ring++;
  if (c->on_replay) {
    replay_info info;
    info.last_event_id = c->last_sent;
    info.replayed = static_cast<std::int64_t>(frames.size());
    info.oldest_event_id = source_.oldest_held();
    std::exchange(c->on_replay, nullptr)(info);
  }
  if (frames.size() > page_) frames.resize(page_);
  if (!frames.empty()) {
    c->last_sent = frames.back()->id;
    c->sub->deliver(make_frame_batch(std::move(frames)));
  }
  // Caught up: from here on it takes batches as they commit, with no gap and no repeat.
  if (c->last_sent >= source_.committed_id()) {
    c->live = true;
    stats_.subscribers_catching_up--;
    return;
  }
  after_drained(c);
}

void subscriber_cursors::read_log_page(const cursor_ptr& c) {
  // The log up to what the ring serves (retention may keep less in the log than the ring).
  const auto& ring = source_.ring();
  const std::int64_t upto = ring.log_upto(source_.committed_id());
  const std::size_t limit = std::min(static_cast<std::size_t>(std::max<std::int64_t>(upto - c->last_sent, 0)), page_);
  stats_.replay_reads_log++;
  source_.read_log(c->last_sent, limit,
                   [this, c](std::exception_ptr error, std::int64_t log_oldest, std::vector<frame_ptr> frames) {
                     if (c->gone) return;
                     // Without the log the sequence cannot continue: end the stream, the client resumes.
                     if (error) return cut(c);
                     on_log_page(c, log_oldest, std::move(frames));
                   });
}

void subscriber_cursors::on_log_page(const cursor_ptr& c, std::int64_t log_oldest, std::vector<frame_ptr> frames) {
  // What the ring holds is served from the ring.
  const auto& ring = source_.ring();
  const std::int64_t in_ring = ring.size() ? ring.oldest_id() : 0;
  if (in_ring) std::erase_if(frames, [&](const frame_ptr& f) { return f->id >= in_ring; });
  // The first event held after the cursor; beyond cursor + 1, retention removed some (a gap).
  const std::int64_t first_held = !frames.empty() ? frames.front()->id : (in_ring ? in_ring : source_.committed_id() + 1);
  // Retention removed events this subscriber was never sent, while it lagged: it must not
  // skip them silently. Its stream ends; the resume answers gap: true with the oldest id.
  // (A resume's first page announces its gap in `reconnected` instead.)
  if (!c->on_replay && first_held > c->last_sent + 1) return cut(c);
  if (c->on_replay) {
    replay_info info;
    info.last_event_id = c->last_sent;
    info.gap = first_held > c->last_sent + 1;
    info.oldest_event_id = log_oldest && (!in_ring || log_oldest < in_ring) ? log_oldest : in_ring;
    // Past a gap the first event held is the oldest there is (retention cuts from the
    // start). The log's oldest id was read a statement before its frames, and a trim that
    // committed in between would name an event the replay never had.
    if (info.gap && (!frames.empty() || in_ring)) info.oldest_event_id = first_held;
    // `reconnected` counts what is committed now, from the first event held.
    info.replayed = std::max<std::int64_t>(0, source_.committed_id() - first_held + 1);
    std::exchange(c->on_replay, nullptr)(info);
  }
  if (frames.empty()) {
    // Nothing in the log after the cursor: go on from just before the first event held.
    c->last_sent = std::max(c->last_sent, first_held - 1);
    return catch_up(c);
  }
  c->last_sent = frames.back()->id;
  c->sub->deliver(make_frame_batch(std::move(frames)));
  // The next page once this one is taken: a lagging subscriber holds at most a page.
  after_drained(c);
}

void subscriber_cursors::cut(const cursor_ptr& c) {
  remove(c->sub.get());
  c->sub->close(subscriber::close_reason::broken);
}

void subscriber_cursors::after_drained(const cursor_ptr& c) {
  // The subscriber calls back from its own executor: the step goes back to the strand.
  c->sub->when_drained([this, c, alive = source_.keep_alive()] { source_.defer([this, c] { catch_up(c); }); });
}

}  // namespace agw::core
