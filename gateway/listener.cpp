#include "gateway/listener.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <memory>

#include "gateway/app_context.hpp"
#include "gateway/connection_refusal.hpp"
#include "gateway/http_connection.hpp"

namespace agw::gateway {

namespace {
// SO_REUSEPORT (Linux 3.9): Asio has no named option for it.
using reuse_port = net::detail::socket_option::boolean<SOL_SOCKET, SO_REUSEPORT>;
// After a failed accept (out of descriptors and the like) or a loop that threw.
constexpr auto accept_pause = std::chrono::milliseconds(50);
}  // namespace

listener::listener(core::io_pool& io, const net::ip::tcp::endpoint& endpoint, app_context& app) : io_(io), app_(app) {
  if (endpoint.port() != 0) {
    // SO_REUSEPORT would let this process share a port another process of the same
    // user listens on (a second gateway started by mistake would take half of the
    // first one's connections): a plain bind first fails with "address in use" then.
    net::ip::tcp::acceptor probe(io.primary());
    probe.open(endpoint.protocol());
    probe.set_option(net::socket_base::reuse_address(true));
    probe.bind(endpoint);
  }
  // The first binds the endpoint (port 0: the kernel picks one); the others join its port.
  auto bind_to = endpoint;
  acceptors_.reserve(io.size());
  for (std::size_t i = 0; i < io.size(); ++i) {
    auto& acceptor = acceptors_.emplace_back(io.context(i));
    acceptor.open(bind_to.protocol());
    acceptor.set_option(net::socket_base::reuse_address(true));
    acceptor.set_option(reuse_port(true));
    acceptor.bind(bind_to);
    acceptor.listen(net::socket_base::max_listen_connections);
    bind_to = acceptor.local_endpoint();
  }
}

void listener::start() {
  for (std::size_t i = 0; i < acceptors_.size(); ++i) start_loop(i);
}

void listener::start_loop(std::size_t i) {
  net::co_spawn(acceptors_[i].get_executor(), accept_loop(acceptors_[i], io_.context(i)), [this, i](std::exception_ptr e) {
    if (!e) return;  // closed
    // The kernel keeps giving this acceptor its share of new connections while it is
    // open: a loop that died would leave them unanswered, so it starts again after the
    // pause an accept error gets.
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      spdlog::error("accept loop {} ended by an exception: {}; restarting it", i, x.what());
    } catch (...) {
      spdlog::error("accept loop {} ended by an exception; restarting it", i);
    }
    auto pause = std::make_shared<net::steady_timer>(acceptors_[i].get_executor(), accept_pause);
    pause->async_wait([this, i, pause](const beast::error_code&) {
      if (acceptors_[i].is_open()) start_loop(i);
    });
  });
}

void listener::close() {
  for (auto& acceptor : acceptors_)
    net::post(acceptor.get_executor(), [&acceptor] {
      beast::error_code ignored;
      acceptor.close(ignored);
    });
}

awaitable<void> listener::accept_loop(net::ip::tcp::acceptor& acceptor, net::io_context& context) {
  for (;;) {
    // Each connection lives on this acceptor's context (the accepting thread's, its
    // implicit strand: core/io_executor.hpp): its coroutine never runs on two threads at once.
    auto [ec, socket] = co_await acceptor.async_accept(context, net::as_tuple(net::use_awaitable));
    if (ec == net::error::operation_aborted || !acceptor.is_open()) co_return;
    if (ec) {
      // Out of descriptors and the like: log, back off a little, keep serving.
      spdlog::warn("accept failed: {}", ec.message());
      net::steady_timer pause(acceptor.get_executor(), accept_pause);
      co_await pause.async_wait(net::as_tuple(net::use_awaitable));
      continue;
    }
    beast::error_code ignored;  // a peer already gone: its connection ends at the first read
    socket.set_option(net::ip::tcp::no_delay(true), ignored);
    // Over the limit a client still gets an answer it can act on (503, Retry-After). Each
    // thread's acceptor reads the gauge before its connection is counted, so with N io
    // threads up to N - 1 connections may get in over the limit at one moment.
    const auto max = app_.config.max_connections;
    if (max && app_.stats.http_connections_open.load() >= static_cast<std::int64_t>(max)) {
      refuse_connection(std::move(socket), app_);
      continue;
    }
    start_connection(std::move(socket), app_);
  }
}

}  // namespace agw::gateway
