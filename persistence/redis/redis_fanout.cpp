#include "persistence/redis/redis_fanout.hpp"

#include <hiredis/hiredis.h>
#include <poll.h>
#include <pthread.h>
#include <spdlog/spdlog.h>

#include <boost/url/parse.hpp>
#include <charconv>
#include <csignal>
#include <cstdio>
#include <memory>
#include <random>
#include <stdexcept>

#include "core/events/log_codec.hpp"

namespace agw::persistence::redis {

namespace {

using steady = std::chrono::steady_clock;

std::int64_t now_ns() { return std::chrono::duration_cast<std::chrono::nanoseconds>(steady::now().time_since_epoch()).count(); }

timeval to_timeval(std::chrono::milliseconds d) {
  return timeval{static_cast<time_t>(d.count() / 1000), static_cast<suseconds_t>((d.count() % 1000) * 1000)};
}

// hiredis writes with write(2): a connection Redis closed would raise SIGPIPE. Blocked on
// the adapter's own threads only, the write fails with EPIPE instead.
void block_sigpipe_on_this_thread() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

struct context_free {
  void operator()(redisContext* c) const { redisFree(c); }
};
using context_ptr = std::unique_ptr<redisContext, context_free>;

struct reply_free {
  void operator()(void* r) const { freeReplyObject(r); }
};
using reply_ptr = std::unique_ptr<redisReply, reply_free>;

context_ptr connect(const redis_address& a, std::chrono::milliseconds timeout) {
  context_ptr c(redisConnectWithTimeout(a.host.c_str(), a.port, to_timeval(timeout)));
  if (!c || c->err) return nullptr;
  if (redisSetTimeout(c.get(), to_timeval(timeout)) != REDIS_OK) return nullptr;
  return c;
}

std::string random_origin() {
  std::random_device rd;
  std::uniform_int_distribution<std::uint64_t> dist;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(dist(rd)));
  return buf;
}

bool parse_int(std::string_view text, std::int64_t& out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

redis_address parse_redis_url(std::string_view url) {
  auto parsed = boost::urls::parse_uri(url);
  if (!parsed || parsed->scheme() != "redis" || parsed->host().empty() || parsed->has_userinfo())
    throw std::invalid_argument("not a redis://host[:port] URL: " + std::string(url));
  redis_address out;
  out.host = parsed->host_address();
  if (parsed->has_port()) out.port = parsed->port_number();
  if (out.port <= 0) throw std::invalid_argument("bad port in " + std::string(url));
  return out;
}

redis_fanout::redis_fanout(const std::string& url, options opts)
    : address_(parse_redis_url(url)), opts_(opts), origin_(random_origin()) {}

redis_fanout::~redis_fanout() { stop(); }

void redis_fanout::start(core::live_fanout_receiver& receiver, core::metrics& stats) {
  if (running_.exchange(true)) return;
  receiver_ = &receiver;
  stats_ = &stats;
  {
    std::lock_guard lock(mutex_);
    stopping_ = false;
  }
  publisher_ = std::thread([this] { publisher_loop(); });
  subscriber_ = std::thread([this] { subscriber_loop(); });
}

void redis_fanout::stop() {
  if (!running_.exchange(false)) return;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    queue_.clear();
  }
  wake_.notify_all();
  if (publisher_.joinable()) publisher_.join();
  if (subscriber_.joinable()) subscriber_.join();
  stats_->fanout_connected = 0;
  connected_since_ns_ = 0;
}

bool redis_fanout::live() const {
  const std::int64_t since = connected_since_ns_.load();
  return since != 0 && now_ns() - since >= std::chrono::nanoseconds(opts_.live_after).count();
}

bool redis_fanout::pause(std::chrono::milliseconds d) {
  std::unique_lock lock(mutex_);
  wake_.wait_for(lock, d, [this] { return stopping_; });
  return !stopping_;
}

void redis_fanout::publish(std::string_view session_id, std::int64_t last_id, std::span<const core::frame_ptr> frames) {
  if (!running_.load(std::memory_order_relaxed)) return;
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    if (queue_.size() >= opts_.queue_capacity) {
      stats_->fanout_dropped++;
      return;
    }
    queue_.push_back(message{std::string(session_id), last_id, std::vector<core::frame_ptr>(frames.begin(), frames.end())});
  }
  wake_.notify_all();
}

void redis_fanout::publisher_loop() {
  block_sigpipe_on_this_thread();
  context_ptr c;
  auto backoff = opts_.backoff_min;
  auto next_attempt = steady::now();
  std::string channel;
  std::string payload;
  for (;;) {
    std::deque<message> work;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      work.swap(queue_);
    }
    if (!c && steady::now() >= next_attempt) {
      c = connect(address_, opts_.io_timeout);
      if (c) {
        backoff = opts_.backoff_min;
      } else {
        next_attempt = steady::now() + backoff;
        backoff = std::min(backoff * 2, opts_.backoff_max);
      }
    }
    if (!c) {  // Redis unreachable: the followers read these from the log
      stats_->fanout_dropped += work.size();
      continue;
    }
    // Pipelined: every PUBLISH of this round goes out before the first reply is read.
    for (const auto& m : work) {
      channel.assign(channel_prefix);
      channel += m.session_id;
      const std::int64_t first = m.frames.empty() ? m.last_id + 1 : m.frames.front()->id;
      payload = origin_ + ' ' + std::to_string(first) + ' ' + std::to_string(m.last_id) + '\n';
      if (!m.frames.empty()) core::encode_log_frames(m.frames, payload);
      redisAppendCommand(c.get(), "PUBLISH %b %b", channel.data(), channel.size(), payload.data(), payload.size());
    }
    std::size_t answered = 0;
    for (; answered < work.size(); ++answered) {
      void* r = nullptr;
      if (redisGetReply(c.get(), &r) != REDIS_OK) break;
      freeReplyObject(r);
    }
    stats_->fanout_published += answered;
    if (answered < work.size()) {
      spdlog::warn("redis fan-out: publishing failed ({}); reconnecting", c->errstr);
      stats_->fanout_dropped += work.size() - answered;
      c.reset();
      next_attempt = steady::now() + backoff;
    }
  }
}

void redis_fanout::subscriber_loop() {
  block_sigpipe_on_this_thread();
  auto backoff = opts_.backoff_min;
  bool was_connected = false;
  const std::string pattern = std::string(channel_prefix) + "*";
  for (;;) {
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;
    }
    context_ptr c = connect(address_, opts_.io_timeout);
    reply_ptr ack;
    if (c) ack.reset(static_cast<redisReply*>(redisCommand(c.get(), "PSUBSCRIBE %s", pattern.c_str())));
    if (!c || !ack || ack->type != REDIS_REPLY_ARRAY) {
      if (!pause(backoff)) return;
      backoff = std::min(backoff * 2, opts_.backoff_max);
      continue;
    }
    backoff = opts_.backoff_min;
    if (was_connected) stats_->fanout_reconnects++;
    if (was_connected) spdlog::info("redis fan-out: subscribed again");
    was_connected = true;
    connected_since_ns_ = now_ns();
    stats_->fanout_connected = 1;
    bool stopping = false;
    while (!stopping) {
      // Whatever is already buffered first, then wait for the socket (a short poll, so
      // stop() is seen within it).
      void* r = nullptr;
      bool failed = false;
      while (redisGetReplyFromReader(c.get(), &r) == REDIS_OK && r) {
        reply_ptr reply(static_cast<redisReply*>(r));
        r = nullptr;
        if (reply->type == REDIS_REPLY_ARRAY && reply->elements == 4 && reply->element[2]->type == REDIS_REPLY_STRING &&
            reply->element[3]->type == REDIS_REPLY_STRING)
          on_message(std::string_view(reply->element[2]->str, reply->element[2]->len),
                     std::string_view(reply->element[3]->str, reply->element[3]->len));
      }
      if (c->err) failed = true;
      if (!failed) {
        pollfd p{c->fd, POLLIN, 0};
        const int n = ::poll(&p, 1, 200);
        {
          std::lock_guard lock(mutex_);
          stopping = stopping_;
        }
        if (stopping) break;
        if (n > 0 && redisBufferRead(c.get()) != REDIS_OK) failed = true;
      }
      if (failed) {
        spdlog::warn("redis fan-out: subscriber connection lost ({}); followers poll the log until it is back", c->errstr);
        break;
      }
    }
    connected_since_ns_ = 0;
    stats_->fanout_connected = 0;
    if (stopping) return;
  }
}

void redis_fanout::on_message(std::string_view channel, std::string_view payload) {
  if (!channel.starts_with(channel_prefix)) return;
  const auto head_end = payload.find('\n');
  if (head_end == std::string_view::npos) return;
  const std::string_view head = payload.substr(0, head_end);
  const auto s1 = head.find(' ');
  const auto s2 = s1 == std::string_view::npos ? s1 : head.find(' ', s1 + 1);
  if (s2 == std::string_view::npos) return;
  if (head.substr(0, s1) == origin_) return;  // our own
  std::int64_t first = 0;
  std::int64_t last = 0;
  if (!parse_int(head.substr(s1 + 1, s2 - s1 - 1), first) || !parse_int(head.substr(s2 + 1), last) || last <= 0) return;
  const std::string_view body = payload.substr(head_end + 1);
  std::vector<core::frame_ptr> frames;
  try {
    if (!body.empty()) frames = core::decode_log_frames(body, first);
  } catch (const std::exception& e) {
    spdlog::warn("redis fan-out: undecodable message on {}: {}", channel, e.what());
    frames.clear();  // the log still has them: the followers read it there
  }
  stats_->fanout_received++;
  receiver_->committed_elsewhere(std::string(channel.substr(channel_prefix.size())), last, std::move(frames));
}

}  // namespace agw::persistence::redis
