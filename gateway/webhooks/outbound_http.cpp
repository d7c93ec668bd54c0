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

using post_request = http::request<http::string_body>;

// When an attempt started (its duration is measured from there) and how long each phase may take.
struct attempt_timing {
  std::chrono::steady_clock::time_point started;
  std::chrono::steady_clock::duration connect_timeout;
  std::chrono::steady_clock::duration response_timeout;
};

// An attempt that ended before a status came back.
core::attempt_result failed_attempt(std::string error, std::chrono::steady_clock::time_point started) {
  core::attempt_result out;
  out.error = std::move(error);
  out.duration_ms = elapsed_ms(started);
  return out;
}

// The callback's POST: one request per connection, so Connection: close.
post_request make_post(const core::callback_target& t, const header_list& headers, const std::string& body) {
  post_request req{http::verb::post, t.target, 11};
  req.set(http::field::host, core::host_header(t));
  for (const auto& [name, value] : headers) req.set(name, value);
  req.set(http::field::connection, "close");
  req.body() = body;
  req.prepare_payload();
  return req;
}

// The exchange over a plain connection, then shutdown. (By value: the frame owns the stream and the request.)
net::awaitable<core::attempt_result> post_plain(beast::tcp_stream tcp_stream, post_request req, attempt_timing timing) {
  tcp_stream.expires_after(timing.response_timeout);
  auto exchanging = exchange(tcp_stream, req, timing.started);
  auto out = co_await std::move(exchanging);
  boost::system::error_code ignored;
  tcp_stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  co_return out;
}

// TLS (SNI, certificate and host name verification) over the connected socket, then
// the exchange. `tls` is a reference: it is the outbound_http's context, and that
// object outlives the post() that awaits this.
net::awaitable<core::attempt_result> post_over_tls(beast::tcp_stream tcp_stream, net::ssl::context& tls, core::callback_target t,
                                                   post_request req, attempt_timing timing) {
  beast::ssl_stream<beast::tcp_stream> tls_stream(std::move(tcp_stream), tls);
  if (!prepare_tls_client(tls_stream, t.host, t.host_is_address))
    co_return failed_attempt("tls: could not set SNI", timing.started);
  beast::get_lowest_layer(tls_stream).expires_after(timing.connect_timeout);
  auto handshaking = tls_stream.async_handshake(net::ssl::stream_base::client, net::as_tuple(net::use_awaitable));
  auto [handshake_ec] = co_await std::move(handshaking);
  if (handshake_ec) co_return failed_attempt(describe("tls", handshake_ec), timing.started);
  beast::get_lowest_layer(tls_stream).expires_after(timing.response_timeout);
  auto exchanging = exchange(tls_stream, req, timing.started);
  auto out = co_await std::move(exchanging);
  // No TLS close_notify round trip: the answer is in, and the receiver may be slow to close.
  boost::system::error_code ignored;
  beast::get_lowest_layer(tls_stream).socket().shutdown(tcp::socket::shutdown_both, ignored);
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
    if (why.empty())
      out.endpoints.emplace_back(a, t.port);
    else if (out.refusal.empty())
      out.refusal = why;
  }
  if (out.endpoints.empty() && out.refusal.empty()) out.refusal = "resolve: no address for " + t.host;
  co_return out;
}

outbound_http::outbound_http(const core::settings& config)
    : config_(config), tls_(make_tls_client_context(config.webhook_ca_file, "GATEWAY_WEBHOOK_CA_FILE")) {}

net::awaitable<core::attempt_result> outbound_http::post(const core::callback_target& t, const core::address_policy& policy,
                                                         const header_list& headers, const std::string& body) {
  const attempt_timing timing{std::chrono::steady_clock::now(), to_duration(config_.webhook_connect_timeout),
                              to_duration(config_.webhook_timeout)};

  auto resolving = resolve_callback_target(t, policy, timing.connect_timeout);
  auto target = co_await std::move(resolving);
  if (target.endpoints.empty()) co_return failed_attempt(target.refusal, timing.started);

  auto req = make_post(t, headers, body);

  auto executor = co_await net::this_coro::executor;
  beast::tcp_stream tcp_stream(executor);
  tcp_stream.expires_after(timing.connect_timeout);
  auto connecting = tcp_stream.async_connect(target.endpoints, net::as_tuple(net::use_awaitable));
  auto [connect_ec, endpoint] = co_await std::move(connecting);
  (void)endpoint;
  if (connect_ec) co_return failed_attempt(describe("connect", connect_ec), timing.started);

  if (!t.https) {
    auto posting = post_plain(std::move(tcp_stream), std::move(req), timing);
    co_return co_await std::move(posting);
  }
  auto posting = post_over_tls(std::move(tcp_stream), tls_, t, std::move(req), timing);
  co_return co_await std::move(posting);
}

}  // namespace agw::gateway
