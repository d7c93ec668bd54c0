#include "gateway/http/beast_streaming_client.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/cancellation_state.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <optional>
#include <vector>

#include "core/http/http_url.hpp"
#include "gateway/http/client_connection.hpp"

namespace agw::gateway {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using core::streaming_http_errc;
using error_code = boost::system::error_code;

namespace {

enum class phase { connecting, handshaking, exchanging };

bool is_http_parse_error(const error_code& ec) {
  return &ec.category() == &http::make_error_code(http::error::bad_version).category();
}

// One place that turns what Asio, Beast and OpenSSL report into the contract's few cases.
streaming_http_errc classify(const error_code& ec, phase p) {
  if (ec == net::error::operation_aborted) return streaming_http_errc::cancelled;
  if (ec == beast::error::timeout || ec == net::error::timed_out)
    return p == phase::exchanging ? streaming_http_errc::idle_timeout : streaming_http_errc::connect_timeout;
  if (p == phase::connecting) return streaming_http_errc::connect_failed;
  if (p == phase::handshaking) return streaming_http_errc::tls_failed;
  if (ec == http::error::end_of_stream || ec == http::error::partial_message || ec == net::error::eof ||
      ec == net::error::connection_reset || ec == net::error::broken_pipe || ec == net::ssl::error::stream_truncated)
    return streaming_http_errc::connection_lost;
  if (is_http_parse_error(ec)) return streaming_http_errc::protocol_error;
  return streaming_http_errc::connection_lost;
}

// One request and its response over one connection: owns the resolver, the
// TCP (or TLS) stream, the read buffer, the parser and the piece buffer. Not
// thread-safe: runs on the executor it was prepared with; each coroutine holds
// the exchange alive (shared_from_this) while it runs.
class beast_exchange final : public core::streaming_http_exchange, public std::enable_shared_from_this<beast_exchange> {
 public:
  beast_exchange(net::any_io_executor executor, core::streaming_request request, std::shared_ptr<net::ssl::context> tls,
                 const beast_streaming_client_options& options)
      : executor_(std::move(executor)), request_(std::move(request)), tls_context_(std::move(tls)), piece_(options.max_piece) {
    parser_.header_limit(static_cast<std::uint32_t>(options.header_limit));
    // No body limit: the caller consumes the body as it comes, nothing accumulates here.
    parser_.body_limit(boost::none);
  }

  net::awaitable<core::open_result> open() override;
  const core::streaming_response_head& head() const override { return head_; }
  net::awaitable<core::body_read> read_some() override;

  void cancel() override {
    cancelled_ = true;
    if (resolver_) resolver_->cancel();
    close_connection();
  }

 private:
  enum class state { fresh, opening, open, done, failed };

  // True once cancel() ran or the awaiting coroutine was cancelled. Checked after
  // every step, so even an operation that ignores cancellation (a name lookup)
  // stops the exchange as soon as it returns.
  bool stopped(const net::cancellation_state& cs) {
    if (cs.cancelled() != net::cancellation_type::none) cancelled_ = true;
    return cancelled_;
  }

  beast::tcp_stream* lowest() {
    if (tls_stream_) return &beast::get_lowest_layer(*tls_stream_);
    return tcp_ ? &*tcp_ : nullptr;
  }

  void close_connection() {
    if (auto* s = lowest()) {
      error_code ignored;
      s->socket().shutdown(tcp::socket::shutdown_both, ignored);
      s->close();
    }
  }

  // Runs `op` on the TLS stream or on the plain one, whichever this exchange uses.
  template <class Op>
  auto with_stream(Op op) {
    return tls_stream_ ? op(*tls_stream_) : op(*tcp_);
  }

  core::open_result open_failure(const error_code& ec, phase p, std::string_view stage) {
    state_ = state::failed;
    const auto errc = cancelled_ ? streaming_http_errc::cancelled : classify(ec, p);
    if (errc == streaming_http_errc::cancelled) cancelled_ = true;
    close_connection();
    return {errc, std::string(stage) + ": " + (errc == streaming_http_errc::cancelled ? "cancelled" : ec.message())};
  }

  core::open_result open_failure(streaming_http_errc errc, std::string detail) {
    state_ = state::failed;
    close_connection();
    return {errc, std::move(detail)};
  }

  core::body_read read_failure(const error_code& ec) {
    state_ = state::failed;
    const auto errc = cancelled_ ? streaming_http_errc::cancelled : classify(ec, phase::exchanging);
    if (errc == streaming_http_errc::cancelled) cancelled_ = true;
    close_connection();
    core::body_read out;
    out.error = errc;
    out.detail = "body: " + (errc == streaming_http_errc::cancelled ? std::string("cancelled") : ec.message());
    return out;
  }

  // The steps of open(): each gives the failure that ends the exchange, or nullopt to go on.
  // (url and cs by value: a coroutine frame keeps no reference to its caller's.)
  net::awaitable<std::optional<core::open_result>> connect(core::http_url url, std::chrono::steady_clock::time_point deadline,
                                                           net::cancellation_state cs);
  net::awaitable<std::optional<core::open_result>> handshake(core::http_url url, std::chrono::steady_clock::time_point deadline,
                                                             net::cancellation_state cs);
  net::awaitable<std::optional<core::open_result>> send_and_read_head(core::http_url url, net::cancellation_state cs);
  void take_head();

  http::request<http::string_body> make_request(const core::http_url& url) const {
    http::request<http::string_body> req;
    req.version(11);
    if (auto verb = http::string_to_verb(request_.method); verb != http::verb::unknown)
      req.method(verb);
    else
      req.method_string(request_.method);
    req.target(url.target);
    req.set(http::field::host, core::host_header(url));
    for (const auto& [name, value] : request_.headers) req.set(name, value);
    req.set(http::field::connection, "close");
    req.body() = request_.body;
    req.prepare_payload();
    return req;
  }

  net::any_io_executor executor_;
  core::streaming_request request_;
  std::shared_ptr<net::ssl::context> tls_context_;
  std::shared_ptr<tcp::resolver> resolver_;
  std::optional<beast::tcp_stream> tcp_;
  std::optional<beast::ssl_stream<beast::tcp_stream>> tls_stream_;
  beast::flat_buffer buffer_;
  http::response_parser<http::buffer_body> parser_;
  std::vector<char> piece_;
  core::streaming_response_head head_;
  std::optional<error_code> pending_error_;
  state state_ = state::fresh;
  bool cancelled_ = false;
};

net::awaitable<core::open_result> beast_exchange::open() {
  auto self = shared_from_this();
  // Cancellation comes back as an error code like every other failure, never as an exception.
  co_await net::this_coro::throw_if_cancelled(false);
  const auto cs = co_await net::this_coro::cancellation_state;
  if (state_ != state::fresh) co_return core::open_result{streaming_http_errc::misuse, "open: called twice"};
  state_ = state::opening;
  if (stopped(cs)) co_return open_failure(streaming_http_errc::cancelled, "open: cancelled");

  auto parsed = core::parse_http_url(request_.url, "url");
  if (auto* why = std::get_if<std::string>(&parsed)) co_return open_failure(streaming_http_errc::bad_url, *why);
  const auto& url = std::get<core::http_url>(parsed);

  // One deadline for resolve, connect and handshake together.
  const auto deadline = std::chrono::steady_clock::now() + request_.connect_timeout;
  auto connecting = connect(url, deadline, cs);
  auto failed = co_await std::move(connecting);
  if (failed) co_return std::move(*failed);
  if (url.https) {
    auto handshaking = handshake(url, deadline, cs);
    failed = co_await std::move(handshaking);
    if (failed) co_return std::move(*failed);
  }
  auto exchanging = send_and_read_head(url, cs);
  failed = co_await std::move(exchanging);
  if (failed) co_return std::move(*failed);

  take_head();
  state_ = state::open;
  co_return core::open_result{};
}

// Resolves the host and connects to one of its addresses, both under the deadline.
net::awaitable<std::optional<core::open_result>> beast_exchange::connect(core::http_url url,
                                                                         std::chrono::steady_clock::time_point deadline,
                                                                         net::cancellation_state cs) {
  resolver_ = std::make_shared<tcp::resolver>(executor_);
  auto resolving = resolve_host(resolver_, url.host, url.host_is_address, url.port, request_.connect_timeout);
  auto resolved = co_await std::move(resolving);
  if (stopped(cs)) co_return open_failure(streaming_http_errc::cancelled, "resolve: cancelled");
  if (resolved.error) co_return open_failure(resolved.error, phase::connecting, "resolve");
  if (resolved.addresses.empty())
    co_return open_failure(streaming_http_errc::resolve_failed, "resolve: no address for " + url.host);
  std::vector<tcp::endpoint> endpoints;
  for (const auto& a : resolved.addresses) endpoints.emplace_back(a, url.port);

  tcp_.emplace(executor_);
  tcp_->expires_at(deadline);
  auto connecting = tcp_->async_connect(endpoints, net::as_tuple(net::use_awaitable));
  auto [connect_ec, endpoint] = co_await std::move(connecting);
  (void)endpoint;
  if (connect_ec || stopped(cs)) co_return open_failure(connect_ec, phase::connecting, "connect");
  co_return std::nullopt;
}

// Wraps the connected socket in TLS (SNI, verification) and handshakes under the deadline.
net::awaitable<std::optional<core::open_result>> beast_exchange::handshake(core::http_url url,
                                                                           std::chrono::steady_clock::time_point deadline,
                                                                           net::cancellation_state cs) {
  tls_stream_.emplace(std::move(*tcp_), *tls_context_);
  tcp_.reset();
  if (!prepare_tls_client(*tls_stream_, url.host, url.host_is_address))
    co_return open_failure(streaming_http_errc::tls_failed, "tls: could not set SNI");
  beast::get_lowest_layer(*tls_stream_).expires_at(deadline);
  auto handshaking = tls_stream_->async_handshake(net::ssl::stream_base::client, net::as_tuple(net::use_awaitable));
  auto [handshake_ec] = co_await std::move(handshaking);
  if (handshake_ec || stopped(cs)) co_return open_failure(handshake_ec, phase::handshaking, "tls");
  co_return std::nullopt;
}

// Sends the request and reads the response's header, each within the idle timeout.
net::awaitable<std::optional<core::open_result>> beast_exchange::send_and_read_head(core::http_url url,
                                                                                    net::cancellation_state cs) {
  auto req = make_request(url);
  if (req.method() == http::verb::head) parser_.skip(true);  // a HEAD response has no body whatever it announces
  lowest()->expires_after(request_.idle_timeout);
  auto write = [&req](auto& stream) { return http::async_write(stream, req, net::as_tuple(net::use_awaitable)); };
  auto writing = with_stream(write);
  auto [write_ec, written] = co_await std::move(writing);
  (void)written;
  if (write_ec || stopped(cs)) co_return open_failure(write_ec, phase::exchanging, "send");

  lowest()->expires_after(request_.idle_timeout);
  auto read_header = [this](auto& stream) {
    return http::async_read_header(stream, buffer_, parser_, net::as_tuple(net::use_awaitable));
  };
  auto reading = with_stream(read_header);
  auto [read_ec, read] = co_await std::move(reading);
  (void)read;
  if (read_ec || stopped(cs)) co_return open_failure(read_ec, phase::exchanging, "response");
  co_return std::nullopt;
}

// Keeps the status and the header fields the caller reads through head().
void beast_exchange::take_head() {
  const auto& res = parser_.get();
  head_.status = static_cast<int>(res.result_int());
  for (const auto& field : res) head_.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
}

net::awaitable<core::body_read> beast_exchange::read_some() {
  auto self = shared_from_this();
  co_await net::this_coro::throw_if_cancelled(false);
  const auto cs = co_await net::this_coro::cancellation_state;
  core::body_read out;
  if (stopped(cs)) {
    out.error = streaming_http_errc::cancelled;
    out.detail = "body: cancelled";
    co_return out;
  }
  if (state_ == state::done) {
    out.end = true;
    co_return out;
  }
  if (state_ != state::open) {
    out.error = streaming_http_errc::misuse;
    out.detail = "body: read before a successful open";
    co_return out;
  }
  if (pending_error_) co_return read_failure(*pending_error_);
  auto read_piece = [this](auto& stream) {
    return http::async_read_some(stream, buffer_, parser_, net::as_tuple(net::use_awaitable));
  };
  // A chunk header or trailer moves the parser without giving body bytes: read on until some come.
  while (!parser_.is_done()) {
    auto& body = parser_.get().body();
    body.data = piece_.data();
    body.size = piece_.size();
    lowest()->expires_after(request_.idle_timeout);
    auto reading = with_stream(read_piece);
    auto [ec, bytes] = co_await std::move(reading);
    (void)bytes;
    // need_buffer only says the piece is full: that piece is the answer.
    if (ec == http::error::need_buffer) ec = {};
    const auto got = piece_.size() - parser_.get().body().size;
    if (got > 0) {
      // Bytes that came with an error are still the caller's: they go now, the error with the next read.
      if (ec || stopped(cs)) pending_error_ = ec ? ec : error_code(net::error::operation_aborted);
      out.data.assign(piece_.data(), got);
      break;
    }
    if (ec || stopped(cs)) co_return read_failure(ec ? ec : error_code(net::error::operation_aborted));
  }
  if (!pending_error_ && parser_.is_done()) {
    out.end = true;
    state_ = state::done;
    close_connection();
  }
  co_return out;
}

}  // namespace

beast_streaming_client::beast_streaming_client(beast_streaming_client_options options)
    : options_(std::move(options)),
      tls_(std::make_shared<net::ssl::context>(make_tls_client_context(options_.extra_ca_file, options_.ca_file_setting))) {}

std::shared_ptr<core::streaming_http_exchange> beast_streaming_client::prepare(net::any_io_executor executor,
                                                                               core::streaming_request request) {
  return std::make_shared<beast_exchange>(std::move(executor), std::move(request), tls_, options_);
}

}  // namespace agw::gateway
