#include "gateway/listener.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "gateway/app_context.hpp"
#include "gateway/connection_refusal.hpp"
#include "gateway/http_connection.hpp"

namespace agw::gateway {

listener::listener(core::io_pool& io, const net::ip::tcp::endpoint& endpoint, app_context& app)
    : io_(io), acceptor_(net::make_strand(io.primary())), app_(app) {
  acceptor_.open(endpoint.protocol());
  acceptor_.set_option(net::socket_base::reuse_address(true));
  acceptor_.bind(endpoint);
  acceptor_.listen(net::socket_base::max_listen_connections);
}

void listener::start() { net::co_spawn(acceptor_.get_executor(), accept_loop(), net::detached); }

void listener::close() {
  net::post(acceptor_.get_executor(), [this] {
    beast::error_code ignored;
    acceptor_.close(ignored);
  });
}

awaitable<void> listener::accept_loop() {
  for (;;) {
    // Each connection gets its own strand on the next io context: its coroutine never
    // runs on two threads at once, and the contexts share the connections.
    auto [ec, socket] = co_await acceptor_.async_accept(net::make_strand(io_.next()), net::as_tuple(net::use_awaitable));
    if (ec == net::error::operation_aborted || !acceptor_.is_open()) co_return;
    if (ec) {
      // Out of descriptors and the like: log, back off a little, keep serving.
      spdlog::warn("accept failed: {}", ec.message());
      net::steady_timer pause(acceptor_.get_executor(), std::chrono::milliseconds(50));
      co_await pause.async_wait(net::as_tuple(net::use_awaitable));
      continue;
    }
    socket.set_option(net::ip::tcp::no_delay(true));
    // Over the limit a client still gets an answer it can act on (503, Retry-After).
    const auto max = app_.config.max_connections;
    if (max && app_.stats.http_connections_open.load() >= static_cast<std::int64_t>(max)) {
      refuse_connection(std::move(socket), app_);
      continue;
    }
    start_connection(std::move(socket), app_);
  }
}

}  // namespace agw::gateway
