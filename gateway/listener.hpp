#pragma once
// Accepts connections and starts serve_connection for each on its own strand,
// made on the pool's io contexts in turn; over GATEWAY_MAX_CONNECTIONS open ones a
// connection is answered 503 and closed instead (gateway/connection_refusal.hpp).
// Accepts on the pool's primary context until close(); the drain keeps it open.
#include <boost/asio/ip/tcp.hpp>

#include "core/io_pool.hpp"

#include "gateway/http_types.hpp"

namespace agw::gateway {

struct app_context;

class listener {
 public:
  // Binds and listens at once so start-up errors surface before the server reports ready.
  listener(core::io_pool& io, const net::ip::tcp::endpoint& endpoint, app_context& app);
  void start();
  void close();
  net::ip::tcp::endpoint local_endpoint() const { return acceptor_.local_endpoint(); }

 private:
  awaitable<void> accept_loop();
  core::io_pool& io_;
  net::ip::tcp::acceptor acceptor_;
  app_context& app_;
};

}  // namespace agw::gateway
