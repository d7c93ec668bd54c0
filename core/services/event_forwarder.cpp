#include "core/services/event_forwarder.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/clock.hpp"
#include "core/store_executor.hpp"
#include "core/webhooks/event_batch.hpp"

namespace agw::core {

namespace net = boost::asio;

event_forwarder::event_forwarder(store_executor& store, const clock& time, std::chrono::milliseconds interval,
                                 std::function<void()> outbox_written)
    : store_(store), clock_(time), interval_(interval), outbox_written_(std::move(outbox_written)) {}

void event_forwarder::start(net::any_io_executor executor) { net::co_spawn(executor, loop(shared_from_this()), net::detached); }

// The parameter (unnamed) is the frame's copy of the owner: it keeps `this` alive while the loop runs.
net::awaitable<void> event_forwarder::loop(std::shared_ptr<event_forwarder>) {
  while (!stopped_) {
    std::size_t written = 0;
    try {
      auto passing = pass();
      written = co_await std::move(passing);
    } catch (const std::exception& e) {
      // The cursor did not move: the next pass forwards the same events.
      spdlog::warn("event webhooks: forwarding failed: {}", e.what());
    }
    if (written > 0) continue;  // more may be waiting: no pause while there is a backlog
    auto pausing = clock_.sleep_for(interval_);
    co_await std::move(pausing);
  }
}

net::awaitable<std::size_t> event_forwarder::pass() {
  // Which sessions have events past their cursor: a read, so an idle gateway never writes.
  auto find = [after = after_id_](store_connection& c) {
    auto cursors = c.event_webhook_cursors(after, sessions_per_pass);
    std::vector<event_webhook_cursor> behind;
    for (auto& cur : cursors)
      if (!c.events_after(cur.session_id, cur.forwarded_id, 1).empty()) behind.push_back(cur);
    return std::make_pair(std::move(cursors), std::move(behind));
  };
  auto [cursors, behind] = co_await store_.async_read(std::move(find), net::use_awaitable);
  // Round-robin: the next pass starts after this one's last session, or from the start.
  after_id_ = cursors.size() < sessions_per_pass || cursors.empty() ? std::string() : cursors.back().session_id;
  if (behind.empty()) co_return 0;
  auto forward = [behind, &time = clock_](store_connection& c) {
    std::size_t rows = 0;
    for (const auto& cur : behind) {
      // Re-read inside the write job: the committed cursor and URL, never the read's copy.
      auto current = c.find_event_webhook_cursor(cur.session_id);
      if (!current) continue;  // the session was deleted or lost its URL
      auto events = c.events_after(cur.session_id, current->forwarded_id, max_events_per_delivery);
      if (events.empty()) continue;
      c.insert_webhook_delivery(make_event_batch_delivery(cur.session_id, current->url, events, time.wall_ms()));
      c.advance_event_webhook_cursor(cur.session_id, events.back()->id);
      ++rows;
    }
    return rows;
  };
  const auto rows = co_await store_.async_write(std::move(forward), net::use_awaitable);
  if (rows > 0 && outbox_written_) outbox_written_();
  co_return rows;
}

}  // namespace agw::core
