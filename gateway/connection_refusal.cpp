#include "gateway/connection_refusal.hpp"

#include <spdlog/spdlog.h>
#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include "gateway/app_context.hpp"

namespace agw::gateway {
namespace {

constexpr auto use_tuple = net::as_tuple(net::use_awaitable);

// The whole answer, built once: a refusal costs no allocation per connection.
const std::string& refusal_bytes() {
  static const std::string body = R"({"error":{"code":"unavailable","message":"too many open connections, retry later"}})";
  static const std::string bytes =
      "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json; charset=utf-8\r\nCache-Control: no-store\r\n"
      "Retry-After: 2\r\nConnection: close\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  return bytes;
}

awaitable<void> answer_and_close(beast::tcp_stream stream, app_context& app) {
  stream.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(app.config.write_timeout));
  auto [wec, wn] = co_await net::async_write(stream, net::buffer(refusal_bytes()), use_tuple);
  if (!wec) co_await linger_before_close(stream);
  beast::error_code ignored;
  stream.socket().close(ignored);
}

}  // namespace

awaitable<void> linger_before_close(beast::tcp_stream& stream) {
  beast::error_code ignored;
  stream.socket().shutdown(net::ip::tcp::socket::shutdown_send, ignored);
  stream.expires_after(refusal_linger);
  std::array<char, 4096> discard;
  for (;;) {
    auto [rec, rn] = co_await stream.async_read_some(net::buffer(discard), use_tuple);
    if (rec) break;  // the client's EOF, a reset, or the linger's end
  }
}

void refuse_connection(net::ip::tcp::socket socket, app_context& app) {
  app.stats.http_responses_5xx++;
  auto executor = socket.get_executor();
  net::co_spawn(executor, answer_and_close(beast::tcp_stream(std::move(socket)), app), net::detached);
}

}  // namespace agw::gateway
