#include "gateway/server.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>
#include <cstdio>
#include "gateway/auth/keys_reload_signal.hpp"

#include <thread>

#include "core/storage/store_connection.hpp"
#include "core/webhooks/event_batch.hpp"
#include "gateway/http/agent_environment_setup.hpp"

namespace agw::gateway {

server::server(const core::settings& config, core::storage_backend storage, const core::clock& time, core::live_fanout* fanout)
    : config_(config),
      stats_(),
      io_(config.io_threads ? config.io_threads : std::max(1u, std::thread::hardware_concurrency()), "agw-io-"),
      tools_(core::make_builtin_tools([&time] { return time.wall_now(); })),
      tool_runner_(tools_, 2, config.tool_timeout),
      // A channel lives on the io thread of the request that first needs it.
      hub_([this] { return io_.local_or_next().get_executor(); }, storage.store, storage.events, stats_, config, tool_runner_),
      sessions_(storage.store, hub_, time),
      state_(storage.store, sessions_, hub_, time),
      messages_(storage.store, sessions_),
      events_(sessions_, hub_, time),
      deliveries_(storage.store, sessions_, time),
      health_(storage.store),
      webhooks_(io_.primary().get_executor(), deliveries_, config, stats_, time),
      runs_(storage.store, hub_, sessions_, stats_, time, [this] { webhooks_.wake(); }),
      timeline_(storage.store, hub_, runs_.conversations(), time),
      rate_(config.rate_limit > 0 ? std::make_unique<rate_limiter>(config.rate_limit, config.rate_burst) : nullptr),
      app_{config, stats_, sessions_, runs_, messages_, events_, deliveries_, health_, {}, {}, &webhooks_, rate_.get()},
      drain_(io_, stats_, hub_, runs_, webhooks_, config.drain_timeout),
      fanout_(fanout),
      signals_(io_.primary(), SIGINT, SIGTERM) {
  if (fanout_) {
    // A cluster: committed batches go to the other nodes, theirs come to our channels,
    // and our followers of their runs read the log as well (docs/scale-out.md).
    hub_.use_fanout(*fanout_);
    follower_ =
        std::make_shared<core::log_follower>(io_.primary().get_executor(), hub_, *fanout_, stats_, core::log_follower::options{});
  }
  // The agents' upstream client and profiles, before the first request can make an agent.
  core::install_agent_environment(make_agent_environment(config, tools_));
  runs_.limit_runs(config.max_runs);
  const auto lease = std::chrono::duration_cast<std::chrono::milliseconds>(config.run_lease);
  runs_.set_leases({config.node_id.empty() ? std::string("local") : config.node_id, lease});
  if (config.store == core::store_kind::postgres) {
    // A survivor closes the runs of nodes that stopped renewing their leases (docs/scale-out.md).
    core::run_takeover::options takeover;
    takeover.node_id = runs_.leases().node_id;
    takeover.lease = lease;
    takeover.interval = lease / 2;
    takeover.on_repaired = [this](const std::string& session_id, std::int64_t last_id) {
      // Followers here see the run end: the channel takes on the repair's events; the
      // other nodes hear of them through the fan-out (no frames: they read the log).
      if (auto channel = hub_.find(session_id))
        net::post(channel->strand(), [channel, last_id] { channel->follow_log(last_id); });
      if (fanout_) fanout_->publish(session_id, last_id, {});
    };
    takeover_ = std::make_shared<core::run_takeover>(storage.store, stats_, time, std::move(takeover));
  }
  app_.timeline = &timeline_;
  app_.state = &state_;
  sessions_.set_default_ttl_ms(config.session_ttl * 1000);
  if (!config.test_clock_offset_file.empty())
    sweep_clock_ = std::make_unique<core::file_offset_clock>(time, config.test_clock_offset_file);
  core::session_sweeper::options sweep{
      .default_ttl_ms = config.session_ttl * 1000,
      .interval = std::chrono::duration_cast<std::chrono::milliseconds>(config.session_sweep_interval)};
  // An expiring session with an event webhook tells it, in the job that deletes it.
  auto expiring = [&time](core::store_connection& c, const core::session_record& s) {
    if (s.event_webhook_url)
      c.insert_session_notice(core::make_session_expired_delivery(s.id, *s.event_webhook_url, time.wall_ms()));
  };
  sweeper_ = std::make_shared<core::session_sweeper>(storage.store, hub_, sweep_clock_ ? *sweep_clock_ : time, sweep,
                                                     std::move(expiring), [this](std::size_t) { webhooks_.wake(); });
  if (config.channel_idle.count() > 0)
    evictor_ = std::make_shared<core::channel_evictor>(
        hub_, time, std::chrono::duration_cast<std::chrono::milliseconds>(config.channel_idle));
  forwarder_ =
      std::make_shared<core::event_forwarder>(storage.store, time, std::chrono::milliseconds(200), [this] { webhooks_.wake(); });
  register_routes(app_);
  boost::system::error_code ec;
  auto address = net::ip::make_address(config.host, ec);
  if (ec) throw std::runtime_error("GATEWAY_HOST '" + config.host + "' is not an IP address");
  listener_ = std::make_unique<listener>(io_, net::ip::tcp::endpoint(address, config.port), app_);
}

// The agents' environment refers to this server's tools: it goes with the server.
server::~server() {
  if (fanout_) fanout_->stop();  // nothing reaches the hub after this
  core::install_agent_environment(std::make_shared<core::agent_environment>());
}

int server::run() {
  listener_->start();
  webhooks_.start();
  sweeper_->start(io_.primary().get_executor());
  if (evictor_) evictor_->start(io_.primary().get_executor());
  forwarder_->start(io_.primary().get_executor());
  if (fanout_) {
    fanout_->start(hub_, stats_);
    follower_->start();
  }
  if (takeover_) takeover_->start(io_.primary().get_executor());
  auth::reload_keys_on_sighup(io_.primary(), app_.access);
  signals_.async_wait([this](const boost::system::error_code& ec, int signal) { on_signal(ec, signal); });
  auto endpoint = listener_->local_endpoint();
  spdlog::info("listening on http://{}:{}", endpoint.address().to_string(), endpoint.port());
  // Tests and scripts read the bound port (port 0 picks one) from this line.
  std::printf("agent-gateway listening on %s:%u\n", endpoint.address().to_string().c_str(), endpoint.port());
  std::fflush(stdout);

  io_.run();
  if (fanout_) fanout_->stop();
  spdlog::info("stopped");
  return 0;
}

void server::on_signal(const boost::system::error_code& ec, int signal) {
  if (ec) return;
  if (++signals_seen_ > 1) {
    // Fast exit: whatever is queued for the store is still committed by main.
    spdlog::warn("second signal {}: exiting now", signal);
    io_.stop();
    return;
  }
  spdlog::info("signal {}: draining (deadline {}s)", signal, config_.drain_timeout.count());
  // The listener keeps accepting: a client sees a 503 (and /readyz turns not-ready),
  // never a refused connection, until the process exits.
  app_.draining = true;
  sweeper_->stop();
  if (takeover_) takeover_->stop();
  signals_.async_wait([this](const boost::system::error_code& e, int s) { on_signal(e, s); });
  drain_.start([this] { io_.stop(); });
}

}  // namespace agw::gateway
