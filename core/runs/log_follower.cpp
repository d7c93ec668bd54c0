#include "core/runs/log_follower.hpp"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>

#include "core/runs/run.hpp"
#include "core/storage/store_connection.hpp"

namespace agw::core {

namespace net = boost::asio;

log_follower::log_follower(io_executor executor, session_hub& hub, const live_fanout& fanout, metrics& stats, options opts)
    : timer_(executor), hub_(hub), fanout_(fanout), stats_(stats), opts_(opts) {}

void log_follower::start() {
  stopped_ = false;
  arm();
}

void log_follower::stop() {
  stopped_ = true;
  net::post(timer_.get_executor(), [self = shared_from_this()] { self->timer_.cancel(); });
}

void log_follower::arm() {
  if (stopped_) return;
  timer_.expires_after(fanout_.live() ? opts_.slow : opts_.fast);
  timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (ec || self->stopped_) return;
    self->poll_once([self] { net::post(self->timer_.get_executor(), [self] { self->arm(); }); });
  });
}

namespace {
// Runs `done` when the last holder lets go: when every read of a pass has completed.
struct pass_end {
  std::function<void()> done;
  ~pass_end() {
    if (done) done();
  }
};
}  // namespace

void log_follower::poll_once(std::function<void()> done) {
  auto pass = std::make_shared<pass_end>();
  pass->done = std::move(done);
  for (auto& c : hub_.all_channels()) {
    net::post(c->strand(), [this, self = shared_from_this(), c, pass] {
      // A channel with a run of its own writes the session; one with nobody to serve
      // takes on the log's end when it is next used (or when a message arrives).
      if (c->closed() || c->live_run() || c->subscriber_count() == 0) return;
      const std::int64_t after = c->last_committed_id();
      if (c->last_assigned_id() > after) return;  // events of its own on their way
      stats_.fanout_log_polls++;
      auto read = [session = c->session_id(), after, limit = opts_.page](store_connection& conn) {
        return conn.events_after(session, after, limit);
      };
      auto on_read = [c, pass](std::exception_ptr error, std::vector<frame_ptr> frames) {
        if (error || frames.empty()) return;
        const std::int64_t last = frames.back()->id;
        c->follow_log(last, std::move(frames));
      };
      c->store().async_read(std::move(read), net::bind_executor(c->strand(), std::move(on_read)));
    });
  }
}

}  // namespace agw::core
