#include "gateway/webhooks/outbound_http.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <openssl/ssl.h>

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
  std::vector<net::ip::address> addresses;
  if (t.host_is_address) {
    addresses.push_back(net::ip::make_address(t.host));
  } else {
    auto executor = co_await net::this_coro::executor;
    auto resolver = std::make_shared<tcp::resolver>(executor);
    net::steady_timer deadline(executor);
    deadline.expires_after(timeout);
    // The resolver is shared with the timer's handler, which may run after this frame is gone.
    deadline.async_wait([resolver](const boost::system::error_code& ec) {
      if (!ec) resolver->cancel();
    });
    auto resolving = resolver->async_resolve(t.host, std::to_string(t.port), net::as_tuple(net::use_awaitable));
    auto [ec, results] = co_await std::move(resolving);
    deadline.cancel();
    if (ec) {
      out.refusal = ec == net::error::operation_aborted ? "resolve: timed out" : "resolve: " + ec.message();
      co_return out;
    }
    for (const auto& entry : results) addresses.push_back(entry.endpoint().address());
  }
  for (const auto& a : addresses) {
    auto why = policy.refusal(t.host, a);
    if (why.empty()) out.endpoints.emplace_back(a, t.port);
    else if (out.refusal.empty()) out.refusal = why;
  }
  if (out.endpoints.empty() && out.refusal.empty()) out.refusal = "resolve: no address for " + t.host;
  co_return out;
}

outbound_http::outbound_http(const core::settings& config) : config_(config), tls_(net::ssl::context::tls_client) {
  tls_.set_default_verify_paths();
  if (!config.webhook_ca_file.empty()) {
    boost::system::error_code ec;
    tls_.load_verify_file(config.webhook_ca_file, ec);
    if (ec) throw std::runtime_error("GATEWAY_WEBHOOK_CA_FILE '" + config.webhook_ca_file + "': " + ec.message());
  }
  tls_.set_options(net::ssl::context::default_workarounds | net::ssl::context::no_sslv2 | net::ssl::context::no_sslv3 |
                   net::ssl::context::no_tlsv1 | net::ssl::context::no_tlsv1_1);
}

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
  // SNI names the host; certificates are checked against it (an IP literal is matched against the certificate's IP SANs).
  if (!t.host_is_address && !SSL_set_tlsext_host_name(tls_stream.native_handle(), t.host.c_str())) {
    out.error = "tls: could not set SNI";
    out.duration_ms = elapsed_ms(started);
    co_return out;
  }
  tls_stream.set_verify_mode(net::ssl::verify_peer);
  tls_stream.set_verify_callback(net::ssl::host_name_verification(t.host));
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
