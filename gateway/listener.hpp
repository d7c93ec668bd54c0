#pragma once
// Accepts connections and starts serve_connection for each on the accepting io
// context (the connection's implicit strand, core/io_executor.hpp); over
// GATEWAY_MAX_CONNECTIONS open ones a connection is answered 503 and closed instead
// (gateway/connection_refusal.hpp). Accepts until close(); the drain keeps it open.
//
// One acceptor per io context, all bound to the same port with SO_REUSEPORT: the
// kernel spreads new connections over them, and each connection is served by the
// thread that accepted it. One acceptor on one thread handing connections to the
// others cost a connection a second thread's wake-up before its request was read
// (docs/streaming.md, "Threads").
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <vector>

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
  net::ip::tcp::endpoint local_endpoint() const { return acceptors_.front().local_endpoint(); }

 private:
  void start_loop(std::size_t i);  // acceptors_[i]'s loop, restarted should it throw
  awaitable<void> accept_loop(net::ip::tcp::acceptor& acceptor, net::io_context& context);
  core::io_pool& io_;
  std::vector<net::ip::tcp::acceptor> acceptors_;  // [i] accepts connections for io_.context(i)
  app_context& app_;
};

}  // namespace agw::gateway
