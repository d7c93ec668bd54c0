#pragma once
// The cluster's live fan-out over Redis pub/sub (core/storage/live_fanout.hpp,
// docs/scale-out.md "Redis fan-out"), on hiredis's blocking API, on two threads of
// its own (never an io thread):
//
// - the publisher: one connection fed by a bounded queue. publish() only queues (the
//   frames are shared, not copied); the thread encodes each batch (log_codec: the
//   compact form of the log rows) and pipelines `PUBLISH agw:s:{session} <message>`.
//   A full queue, or no connection, drops the batch and counts it
//   (gateway_fanout_dropped_total): followers read it from the log.
// - the subscriber: one connection with `PSUBSCRIBE agw:s:*`, so every node hears
//   every session (no subscription bookkeeping; the sizing cost is in the doc). It
//   skips what this process published and hands the rest to the receiver.
//
// Message: "<origin> <first_id> <last_id>\n<encoded frames>"; origin is a random id of
// this process; with no frames (the log's new end only), first_id = last_id + 1 and
// nothing follows the newline. Either connection lost is made again with backoff
// (100 ms doubling to 2 s); live() is false while the subscriber is down and for
// `live_after` once it is back (the followers poll the log fast meanwhile).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/metrics.hpp"
#include "core/storage/live_fanout.hpp"

namespace agw::persistence::redis {

struct redis_address {
  std::string host;
  int port = 6379;
};
// redis://host[:port]; throws std::invalid_argument otherwise.
redis_address parse_redis_url(std::string_view url);

class redis_fanout final : public core::live_fanout {
 public:
  struct options {
    std::size_t queue_capacity = 8192;           // batches waiting for the publisher
    std::chrono::milliseconds live_after{1000};  // connected this long before live()
    std::chrono::milliseconds backoff_min{100};
    std::chrono::milliseconds backoff_max{2000};
    std::chrono::milliseconds io_timeout{2000};  // connect and command timeout
  };
  redis_fanout(const std::string& url, options opts);
  explicit redis_fanout(const std::string& url) : redis_fanout(url, options{}) {}
  ~redis_fanout() override;
  redis_fanout(const redis_fanout&) = delete;
  redis_fanout& operator=(const redis_fanout&) = delete;

  void publish(std::string_view session_id, std::int64_t last_id, std::span<const core::frame_ptr> frames) override;
  void start(core::live_fanout_receiver& receiver, core::metrics& stats) override;
  void stop() override;
  bool live() const override;

  // Whether the subscriber connection is up (PSUBSCRIBE acknowledged).
  bool subscribed() const { return connected_since_ns_.load() != 0; }
  const std::string& origin() const { return origin_; }

  static constexpr std::string_view channel_prefix = "agw:s:";

 private:
  struct message {
    std::string session_id;
    std::int64_t last_id = 0;
    std::vector<core::frame_ptr> frames;
  };
  void publisher_loop();
  void subscriber_loop();
  void on_message(std::string_view channel, std::string_view payload);
  // Waits `d` unless stop() comes first; false when stopping.
  bool pause(std::chrono::milliseconds d);

  redis_address address_;
  core::metrics* stats_ = nullptr;  // start()'s
  options opts_;
  std::string origin_;
  core::live_fanout_receiver* receiver_ = nullptr;

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<message> queue_;
  bool stopping_ = false;
  std::atomic<bool> running_{false};
  std::atomic<std::int64_t> connected_since_ns_{0};  // steady clock; 0: not subscribed
  std::thread publisher_;
  std::thread subscriber_;
};

}  // namespace agw::persistence::redis
