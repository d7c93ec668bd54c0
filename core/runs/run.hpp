#pragma once
// One run of a session's agent: identity, abort flag and the timer its agent
// sleeps on (so an abort cuts a sleep short). Lives on the session's strand;
// request_abort() may be called from any thread (it posts). The timer is the
// injected clock's, so tests move a run's time by hand.
#include <algorithm>
#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/strand.hpp>
#include <cstdint>
#include <memory>
#include <string>

#include "core/clock.hpp"
#include "core/events/event_source.hpp"
#include "core/io_executor.hpp"
#include "core/session.hpp"

namespace agw::core {

class run : public std::enable_shared_from_this<run> {
 public:
  // `time` must outlive the run (the process's clock does).
  // `source`: whose answer the run streams (the agent's; an operator message is a run of its own).
  run(io_strand strand, const clock& time, std::string id, std::int64_t started_at_ms, std::int64_t events_before,
      event_source source = event_source::ai_agent);

  const std::string& id() const { return id_; }
  std::int64_t started_at_ms() const { return started_at_ms_; }
  // The session's last event id when the run began: its events are the ones after it.
  std::int64_t events_before() const { return events_before_; }
  // Before the run publishes (strand only): the log holds events up to `id` that another
  // node committed; the run's events come after them.
  void move_events_before(std::int64_t id) { events_before_ = std::max(events_before_, id); }
  run_summary summary() const { return {id_, started_at_ms_}; }
  event_source source() const { return source_; }

  // False when the run is already finishing (its end is decided): the abort came too late.
  bool request_abort();
  bool abort_requested() const { return abort_.load(); }
  // Called on the strand once the run's outcome is fixed; later aborts are refused.
  void mark_finishing() { finishing_ = true; }

  // Sleeps until `deadline` or an abort; true when the full sleep happened. Strand only.
  boost::asio::awaitable<bool> sleep_until(steady_time deadline);
  // Where the run's agent reads the time (its deadlines are this clock's steady time).
  const clock& time() const { return clock_; }

 private:
  io_strand strand_;
  const clock& clock_;
  std::string id_;
  std::int64_t started_at_ms_;
  std::int64_t events_before_;
  event_source source_;
  std::atomic<bool> abort_{false};
  std::atomic<bool> finishing_{false};
  std::unique_ptr<wait_timer> sleeper_;  // on strand_
};

}  // namespace agw::core
