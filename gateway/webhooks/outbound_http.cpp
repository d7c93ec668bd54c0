#include "gateway/webhooks/outbound_http.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

#include "gateway/http/client_connection.hpp"

namespace agw::gateway {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

namespace {

std::chrono::steady_clock::duration to_duration(std::chrono::duration<double> d) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(d);
}

std::int64_t elapsed_ms(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - since).count();
}

std::string describe(std::string_view stage, const boost::system::error_code& ec) {
  if (ec == beast::error::timeout) return std::string(stage) + ": timed out";
  return std::string(stage) + ": " + ec.message();
}

// Sends the request and reads the response header on any stream (plain or TLS).
template <class Stream>
net::awaitable<core::attempt_result> exchange(Stream& stream, http::request<http::string_body>& req,
                                              std::chrono::steady_clock::time_point started) {
  core::attempt_result out;
  auto [write_ec, written] = co_await http::async_write(stream, req, net::as_tuple(net::use_awaitable));
  (void)written;
  if (write_ec) {
    out.error = describe("send", write_ec);
    out.duration_ms = elapsed_ms(started);
    co_return out;
  }
  beast::flat_buffer buffer;
  http::response_parser<http::empty_body> parser;
  auto [read_ec, read] = co_await http::async_read_header(stream, buffer, parser, net::as_tuple(net::use_awaitable));
  (void)read;
  out.duration_ms = elapsed_ms(started);
  if (read_ec) {
    out.error = describe("response", read_ec);
    co_return out;
  }
  const auto& res = parser.get();
  out.status_code = static_cast<int>(res.result_int());
  if (auto it = res.find(http::field::retry_after); it != res.end()) out.retry_after_s = core::parse_retry_after(it->value());
  co_return out;
}

}  // namespace

net::awaitable<resolved_target> resolve_callback_target(const core::callback_target& t, const core::address_policy& policy,
                                                        std::chrono::steady_clock::duration timeout) {
  resolved_target out;
  auto executor = co_await net::this_coro::executor;
  auto resolving = resolve_host(std::make_shared<tcp::resolver>(executor), t.host, t.host_is_address, t.port, timeout);
  auto resolved = co_await std::move(resolving);
  if (const auto& ec = resolved.error) {
    const bool timed_out = ec == net::error::timed_out || ec == net::error::operation_aborted;
    out.refusal = timed_out ? "resolve: timed out" : "resolve: " + ec.message();
    co_return out;
  }
  for (const auto& a : resolved.addresses) {
    auto why = policy.refusal(t.host, a);
    if (why.empty()) out.endpoints.emplace_back(a, t.port);
    else if (out.refusal.empty()) out.refusal = why;
  }
  if (out.endpoints.empty() && out.refusal.empty()) out.refusal = "resolve: no address for " + t.host;
  co_return out;
}

outbound_http::outbound_http(const core::settings& config)
    : config_(config), tls_(make_tls_client_context(config.webhook_ca_file, "GATEWAY_WEBHOOK_CA_FILE")) {}

net::awaitable<core::attempt_result> outbound_http::post(const core::callback_target& t, const core::address_policy& policy,
                                                         const header_list& headers, const std::string& body) {
  const auto started = std::chrono::steady_clock::now();
  const auto connect_timeout = to_duration(config_.webhook_connect_timeout);
  const auto response_timeout = to_duration(config_.webhook_timeout);
  core::attempt_result out;

  auto resolving = resolve_callback_target(t, policy, connect_timeout);
  auto target = co_await std::move(resolving);
  if (target.endpoints.empty()) {
    out.error = target.refusal;
    out.duration_ms = elapsed_ms(started);
    co_return out;
  }

  http::request<http::string_body> req{http::verb::post, t.target, 11};
  req.set(http::field::host, core::host_header(t));
  for (const auto& [name, value] : headers) req.set(name, value);
  req.set(http::field::connection, "close");
  req.body() = body;
  req.prepare_payload();

  auto executor = co_await net::this_coro::executor;
  beast::tcp_stream tcp_stream(executor);
  tcp_stream.expires_after(connect_timeout);
  auto connecting = tcp_stream.async_connect(target.endpoints, net::as_tuple(net::use_awaitable));
  auto [connect_ec, endpoint] = co_await std::move(connecting);
  (void)endpoint;
  if (connect_ec) {
    out.error = describe("connect", connect_ec);
    out.duration_ms = elapsed_ms(started);
    co_return out;
  }

  if (!t.https) {
    tcp_stream.expires_after(response_timeout);
    auto exchanging = exchange(tcp_stream, req, started);
    out = co_await std::move(exchanging);
    boost::system::error_code ignored;
    tcp_stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    co_return out;
  }

  beast::ssl_stream<beast::tcp_stream> tls_stream(std::move(tcp_stream), tls_);
  if (!prepare_tls_client(tls_stream, t.host, t.host_is_address)) {
    out.error = "tls: could not set SNI";
    out.duration_ms = elapsed_ms(started);
    co_return out;
  }
  beast::get_lowest_layer(tls_stream).expires_after(connect_timeout);
  auto handshaking = tls_stream.async_handshake(net::ssl::stream_base::client, net::as_tuple(net::use_awaitable));
  auto [handshake_ec] = co_await std::move(handshaking);
  if (handshake_ec) {
    out.error = describe("tls", handshake_ec);
    out.duration_ms = elapsed_ms(started);
    co_return out;
  }
  beast::get_lowest_layer(tls_stream).expires_after(response_timeout);
  auto exchanging = exchange(tls_stream, req, started);
  out = co_await std::move(exchanging);
  // No TLS close_notify round trip: the answer is in, and the receiver may be slow to close.
  boost::system::error_code ignored;
  beast::get_lowest_layer(tls_stream).socket().shutdown(tcp::socket::shutdown_both, ignored);
  co_return out;
}

}  // namespace agw::gateway
