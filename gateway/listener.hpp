#pragma once
// Accepts connections and starts serve_connection for each on its own strand.
// Runs on the io_context; close() (posted by the server) stops accepting.
#include <boost/asio/ip/tcp.hpp>

#include "gateway/http_types.hpp"

namespace agw::gateway {

struct app_context;

class listener {
 public:
  // Binds and listens at once so start-up errors surface before the server reports ready.
  listener(net::io_context& ioc, const net::ip::tcp::endpoint& endpoint, app_context& app);
  void start();
  void close();
  net::ip::tcp::endpoint local_endpoint() const { return acceptor_.local_endpoint(); }

 private:
  awaitable<void> accept_loop();
  net::io_context& ioc_;
  net::ip::tcp::acceptor acceptor_;
  app_context& app_;
};

}  // namespace agw::gateway
