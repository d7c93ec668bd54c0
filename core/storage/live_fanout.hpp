#pragma once
// Port: live delivery of committed events between the nodes of a cluster
// (docs/scale-out.md, "Redis fan-out"). The node that writes a session publishes
// each batch once it is committed; every other node hears it and hands it to its
// channel of that session (session_channel::follow_log), whose subscribers get it
// through the same cursor logic as a local commit. The durable log stays the
// reference: a message lost, late or never sent costs its followers latency (they
// read the gap from the log, see log_follower.hpp), never an event.
//
// Nothing here is called on an io thread's critical path but publish(), which must
// not block: an implementation queues (and may drop) and does its I/O on its own
// threads. A single node configures none: the channels then hold no fan-out at all
// (a null pointer in channel_services), so a batch costs nothing more.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/events/event_frame.hpp"
#include "core/metrics.hpp"

namespace agw::core {

// What hears other nodes' commits: the process's session_hub. Called on the
// fan-out's own thread; it must not block (it posts to the channel's strand).
class live_fanout_receiver {
 public:
  virtual ~live_fanout_receiver() = default;
  // Another node committed the session's events up to `last_id`; `frames` are those
  // events when the message carried them (consecutive ids ending at last_id), else
  // empty: "the log now ends at last_id".
  virtual void committed_elsewhere(const std::string& session_id, std::int64_t last_id, std::vector<frame_ptr> frames) = 0;
};

class live_fanout {
 public:
  virtual ~live_fanout() = default;
  // On the writing node, after a commit (any thread, never blocks). `frames` may be
  // empty: then only the new end of the log is announced (a survivor closing a dead
  // node's run, say).
  virtual void publish(std::string_view session_id, std::int64_t last_id, std::span<const frame_ptr> frames) = 0;
  // Starts delivering other nodes' messages to `receiver`, counting into `stats` (both
  // outlive stop()).
  virtual void start(live_fanout_receiver& receiver, metrics& stats) = 0;
  // Stops the threads; nothing reaches the receiver afterwards.
  virtual void stop() = 0;
  // Whether live messages flow now and have for a moment: when not, followers poll the
  // log fast (log_follower.hpp), since messages may be missed.
  virtual bool live() const = 0;
};

// A single node: nothing to tell, nothing to hear. For code that takes a live_fanout&
// (a survivor's sweep announcing a closed run, say); the channels themselves hold no
// fan-out at all on a single node (channel_services::fanout is null).
class null_live_fanout final : public live_fanout {
 public:
  void publish(std::string_view, std::int64_t, std::span<const frame_ptr>) override {}
  void start(live_fanout_receiver&, metrics&) override {}
  void stop() override {}
  bool live() const override { return false; }
};

}  // namespace agw::core
