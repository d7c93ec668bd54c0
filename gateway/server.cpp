#include "gateway/server.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/ip/address.hpp>
#include <cstdio>

#include <thread>

#include "gateway/http/agent_environment_setup.hpp"

namespace agw::gateway {

server::server(const core::settings& config, core::storage_backend storage, const core::clock& time)
    : config_(config),
      stats_(),
      io_(config.io_threads ? config.io_threads : std::max(1u, std::thread::hardware_concurrency()), "agw-io-"),
      tools_(core::make_builtin_tools([&time] { return time.wall_now(); })),
      tool_runner_(tools_, 2, config.tool_timeout),
      // A channel lives on the io thread of the request that first needs it.
      hub_([this] { return io_.local_or_next().get_executor(); }, storage.store, storage.events, stats_, config, tool_runner_),
      sessions_(storage.store, hub_, time),
      messages_(storage.store, sessions_),
      events_(sessions_, hub_, time),
      deliveries_(storage.store, sessions_, time),
      health_(storage.store),
      webhooks_(io_.primary().get_executor(), deliveries_, config, stats_, time),
      runs_(storage.store, hub_, sessions_, stats_, time, [this] { webhooks_.wake(); }),
      app_{config, stats_, sessions_, runs_, messages_, events_, deliveries_, health_, {}, {}, &webhooks_},
      signals_(io_.primary(), SIGINT, SIGTERM) {
  // The agents' upstream client and profiles, before the first request can make an agent.
  core::install_agent_environment(make_agent_environment(config, tools_));
  register_routes(app_);
  boost::system::error_code ec;
  auto address = net::ip::make_address(config.host, ec);
  if (ec) throw std::runtime_error("GATEWAY_HOST '" + config.host + "' is not an IP address");
  listener_ = std::make_unique<listener>(io_, net::ip::tcp::endpoint(address, config.port), app_);
}

// The agents' environment refers to this server's tools: it goes with the server.
server::~server() { core::install_agent_environment(std::make_shared<core::agent_environment>()); }

int server::run() {
  listener_->start();
  webhooks_.start();
  signals_.async_wait([this](const boost::system::error_code& ec, int signal) { on_signal(ec, signal); });
  auto endpoint = listener_->local_endpoint();
  spdlog::info("listening on http://{}:{}", endpoint.address().to_string(), endpoint.port());
  // Tests and scripts read the bound port (port 0 picks one) from this line.
  std::printf("agent-gateway listening on %s:%u\n", endpoint.address().to_string().c_str(), endpoint.port());
  std::fflush(stdout);

  io_.run();
  spdlog::info("stopped");
  return 0;
}

void server::on_signal(const boost::system::error_code& ec, int signal) {
  if (ec) return;
  if (++signals_seen_ > 1) {
    spdlog::warn("second signal {}: exiting now", signal);
    io_.stop();
    return;
  }
  spdlog::info("signal {}: draining (deadline {}s)", signal, config_.drain_timeout.count());
  app_.draining = true;
  listener_->close();
  // Followers of /events are told to come back later; run streams go on to their done.
  hub_.close_all_streams();
  // Deliveries not yet attempted stay pending in the database for the next start.
  webhooks_.stop();
  signals_.async_wait([this](const boost::system::error_code& e, int s) { on_signal(e, s); });
  finish_drain();
}

void server::finish_drain() {
  // Live runs get until the deadline; then the io loop stops and main flushes storage.
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(config_.drain_timeout);
  auto poll = std::make_shared<net::steady_timer>(io_.primary());
  auto check = std::make_shared<std::function<void()>>();
  *check = [this, poll, check, deadline] {
    // Done when every run has ended and every stream has written its last frame (followers
    // were closed when the drain began), or at the deadline.
    const bool idle = stats_.runs_live.load() == 0 && stats_.sse_streams_open.load() == 0;
    if (idle || std::chrono::steady_clock::now() >= deadline) {
      if (!idle)
        spdlog::warn("drain deadline reached with {} live runs and {} open streams", stats_.runs_live.load(),
                     stats_.sse_streams_open.load());
      io_.stop();
      *check = nullptr;  // break the self-reference
      return;
    }
    poll->expires_after(std::chrono::milliseconds(50));
    poll->async_wait([check](const boost::system::error_code&) {
      if (*check) (*check)();
    });
  };
  (*check)();
}

}  // namespace agw::gateway
