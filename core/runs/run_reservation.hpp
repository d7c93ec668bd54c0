#pragma once
// Reserving a session's channel for one writer of its conversation: a run of the
// agent, or an operator's message (a run of its own, with a human source). Only
// one holds a session at a time, so checkpoint versions never race. Each function
// hops to the channel's strand and back to the caller's executor.
#include <boost/asio/awaitable.hpp>
#include <memory>
#include <string>

#include "core/events/event_source.hpp"

namespace agw::core {

class clock;
class run;
class session_channel;

// Result of trying to reserve the session for a new run.
struct reservation {
  std::shared_ptr<run> created;  // set when this request owns the new run
  std::string live_run_id;       // set when another run is live
};

// `time` is the process's clock: it outlives every run.
boost::asio::awaitable<reservation> reserve(std::shared_ptr<session_channel> channel, const clock& time,
                                            event_source source = event_source::ai_agent);
// Nothing (more) will be published for `r`: gives the session back.
boost::asio::awaitable<void> release(std::shared_ptr<session_channel> channel, std::shared_ptr<run> r);

}  // namespace agw::core
