#include "gateway/http_connection.hpp"

#include <spdlog/spdlog.h>
#include <boost/algorithm/string/predicate.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/url/parse.hpp>

#include "gateway/access_log.hpp"
#include "gateway/app_context.hpp"
#include "gateway/connection_refusal.hpp"
#include "gateway/cors.hpp"
#include "gateway/json_response.hpp"
#include "gateway/rate_limiter.hpp"
#include "gateway/request_id.hpp"

namespace agw::gateway {
namespace {

constexpr auto use_tuple = net::as_tuple(net::use_awaitable);

// Retry-After on a 503 whose handler named none (draining, storage overloaded or
// down): long enough for a load balancer to take this instance out, short enough
// that a client behind a single instance comes back soon.
constexpr int unavailable_retry_after_seconds = 2;

std::chrono::steady_clock::duration to_duration(std::chrono::duration<double> d) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(d);
}

// One request as the connection sees it: for its X-Request-Id and its access line.
struct exchange {
  std::string_view peer;  // serve_connection's, which outlives every exchange
  std::string request_id{};
  std::string method{};
  std::string target{};
  bool head = false;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();

  void describe(const request& req) {
    request_id = request_id_for(req);
    method = std::string(req.method_string());
    target = std::string(req.target());
    head = req.method() == http::verb::head;
  }
  void log(const app_context& app, unsigned status, std::size_t bytes, bool stream = false) const {
    log_access(app.config.access_log,
               {request_id, peer, method, target, status, bytes, stream, std::chrono::steady_clock::now() - started});
  }
};

// Writes a final error answer; the caller closes the connection after it.
// (Arguments are built into a named response before co_await: GCC 12 mishandles
// non-trivial temporaries inside co_await expressions.)
awaitable<void> reject(beast::tcp_stream& stream, app_context& app, response& res, const exchange& ex) {
  res.keep_alive(false);
  if (ex.head) res.body().clear();  // Content-Length stays: what a GET would have had
  res.set("X-Request-Id", ex.request_id);
  app.stats.http_responses_4xx++;
  ex.log(app, res.result_int(), res.body().size());
  stream.expires_after(to_duration(app.config.write_timeout));
  auto [wec, wn] = co_await http::async_write(stream, res, use_tuple);
  // The request may not have been read whole (a 413, a 431): closing on unread bytes
  // would send a reset that can destroy this answer before the client reads it.
  if (!wec) co_await linger_before_close(stream);
}

response refusal(core::error_code code, const std::string& message, unsigned version) {
  return error_response({code, message}, version);
}

// Why a request's framing is refused before its body is read, or "".
std::string framing_problem(const request& req) {
  auto te = req.find(http::field::transfer_encoding);
  if (te != req.end()) {
    // Only a lone "chunked" is unambiguous; anything else invites request smuggling.
    if (!boost::algorithm::iequals(te->value(), "chunked")) return "unsupported Transfer-Encoding";
    if (req.find(http::field::content_length) != req.end()) return "both Transfer-Encoding and Content-Length";
  }
  if (req.count(http::field::content_length) > 1) return "more than one Content-Length";
  if (req.count(http::field::host) > 1) return "more than one Host";
  // RFC 9112 3.2: an HTTP/1.1 request without Host is a 400.
  if (req.version() >= 11 && req.count(http::field::host) == 0) return "HTTP/1.1 request without Host";
  return "";
}

struct split_target {
  std::vector<std::string> segments;
  core::query_params query;
};

std::optional<split_target> split(std::string_view target) {
  auto parsed = boost::urls::parse_origin_form(target);
  if (!parsed) return std::nullopt;
  split_target out;
  for (auto segment : parsed->segments()) out.segments.push_back(segment);
  // "/sessions/" and "/sessions" name the same collection.
  if (!out.segments.empty() && out.segments.back().empty()) out.segments.pop_back();
  for (auto param : parsed->params()) {
    // A bare "?" or a trailing "&" is an empty parameter, not one named "": nothing asked.
    if (param.key.empty() && !param.has_value) continue;
    out.query.emplace_back(param.key, param.has_value ? param.value : std::string());
  }
  return out;
}

using request_parser = http::request_parser<http::string_body>;

std::string body_too_large(std::size_t max_body_bytes) {
  return "request body larger than " + std::to_string(max_body_bytes) + " bytes";
}

// Answers with an error; the caller then closes the connection. stream and app are
// references: the caller (serve_connection's frame; app lives for the process)
// awaits this at once, so both outlive it.
awaitable<void> refuse(beast::tcp_stream& stream, app_context& app, core::error_code code, std::string message, unsigned version,
                       const exchange& ex) {
  auto refused = refusal(code, message, version);
  co_await reject(stream, app, refused, ex);
}

// Bytes already read from a handed-back connection are the start of its next request.
void preload(beast::flat_buffer& buffer, std::string pending) {
  if (pending.empty()) return;
  buffer.commit(net::buffer_copy(buffer.prepare(pending.size()), net::buffer(pending)));
}

// Between requests a kept-alive client may idle for the idle timeout; once its
// next request starts, the header timeout applies as for a new connection.
// false: the client left or idled out. (References: as for refuse.)
awaitable<bool> await_next_request(beast::tcp_stream& stream, app_context& app, beast::flat_buffer& buffer) {
  stream.expires_after(to_duration(app.config.idle_timeout));
  auto [iec, in] = co_await stream.async_read_some(buffer.prepare(4096), use_tuple);
  if (iec) co_return false;
  buffer.commit(in);
  co_return true;
}

// Reads a request's header; false: the connection closes (answered first when the
// request, not the socket, is at fault). (References: as for refuse.)
awaitable<bool> read_request_header(beast::tcp_stream& stream, app_context& app, beast::flat_buffer& buffer,
                                    request_parser& parser, exchange& ex) {
  stream.expires_after(to_duration(app.config.header_timeout));
  auto [ec, n] = co_await http::async_read_header(stream, buffer, parser, use_tuple);
  ex.started = std::chrono::steady_clock::now();
  ex.request_id = new_request_id();  // replaced by the client's own once the header is read
  if (ec == http::error::header_limit) {
    auto op = refuse(stream, app, core::error_code::request_header_fields_too_large,
                     "request header larger than " + std::to_string(app.config.max_header_bytes) + " bytes", 11, ex);
    co_await std::move(op);
    co_return false;
  }
  if (ec == http::error::body_limit) {
    // Beast checks a declared Content-Length against the body limit while reading the
    // header: a client waiting on Expect: 100-continue gets this 413 and no 100.
    auto op = refuse(stream, app, core::error_code::payload_too_large, body_too_large(app.config.max_body_bytes), 11, ex);
    co_await std::move(op);
    co_return false;
  }
  if (ec == http::error::end_of_stream || ec == beast::error::timeout || ec == net::error::connection_reset ||
      ec == net::error::eof)
    co_return false;
  if (ec) {
    // A malformed request is answered once, then the connection closes; socket errors just close.
    if (ec.category() == http::make_error_code(http::error::bad_method).category()) {
      auto op = refuse(stream, app, core::error_code::bad_request, "malformed request: " + ec.message(), 11, ex);
      co_await std::move(op);
    }
    co_return false;
  }
  ex.describe(parser.get());
  co_return true;
}

// Refuses, before its body is read, a request with ambiguous framing or a declared
// body over the limit; false: refused. (References: as for refuse.)
awaitable<bool> admit_request(beast::tcp_stream& stream, app_context& app, request_parser& parser, const exchange& ex) {
  const unsigned version = parser.get().version();
  if (auto problem = framing_problem(parser.get()); !problem.empty()) {
    auto op = refuse(stream, app, core::error_code::bad_request, problem, version, ex);
    co_await std::move(op);
    co_return false;
  }
  if (parser.content_length() && *parser.content_length() > app.config.max_body_bytes) {
    auto op = refuse(stream, app, core::error_code::payload_too_large, body_too_large(app.config.max_body_bytes), version, ex);
    co_await std::move(op);
    co_return false;
  }
  co_return true;
}

// Reads the body, after a 100 Continue when the client waits for one; false: the
// connection closes. (References: as for refuse.)
awaitable<bool> read_request_body(beast::tcp_stream& stream, app_context& app, beast::flat_buffer& buffer, request_parser& parser,
                                  const exchange& ex) {
  request& req = parser.get();
  const unsigned version = req.version();
  if (boost::algorithm::iequals(req[http::field::expect], "100-continue")) {
    http::response<http::empty_body> cont{http::status::continue_, version};
    stream.expires_after(to_duration(app.config.write_timeout));
    auto [wec, wn] = co_await http::async_write(stream, cont, use_tuple);
    if (wec) co_return false;
  }
  stream.expires_after(to_duration(app.config.header_timeout));
  auto [bec, bn] = co_await http::async_read(stream, buffer, parser, use_tuple);
  if (bec == http::error::body_limit) {
    auto op = refuse(stream, app, core::error_code::payload_too_large, body_too_large(app.config.max_body_bytes), version, ex);
    co_await std::move(op);
    co_return false;
  }
  if (bec) {
    if (bec.category() == http::make_error_code(http::error::bad_chunk).category()) {
      auto op = refuse(stream, app, core::error_code::bad_request, "malformed request body: " + bec.message(), version, ex);
      co_await std::move(op);
    }
    co_return false;
  }
  co_return true;
}

// Reads one whole request into parser; false: the connection closes. (References: as for refuse.)
awaitable<bool> read_request(beast::tcp_stream& stream, app_context& app, beast::flat_buffer& buffer, request_parser& parser,
                             exchange& ex) {
  const bool has_header = co_await read_request_header(stream, app, buffer, parser, ex);
  if (!has_header) co_return false;
  app.stats.http_requests++;
  const bool admitted = co_await admit_request(stream, app, parser, ex);
  if (!admitted) co_return false;
  if (!parser.is_done()) {
    const bool has_body = co_await read_request_body(stream, app, buffer, parser, ex);
    if (!has_body) co_return false;
  }
  stream.expires_never();
  co_return true;
}

// Runs the request's handler; a target that does not parse is answered here.
// (ctx is serve_connection's, which awaits this at once.)
awaitable<handler_result> route(request_context& ctx) {
  if (ctx.req.method() == http::verb::options && ctx.req.target() == "*")
    co_return ctx.app.routes.options_for_server(ctx.req.version());
  auto target = split(ctx.req.target());
  if (!target) co_return error_response({core::error_code::bad_request, "malformed request target"}, ctx.req.version());
  ctx.query = std::move(target->query);
  co_return co_await ctx.app.routes.dispatch(ctx, target->segments);
}

// Writes a handler's answer; false: the connection closes after it. (References: as for refuse.)
awaitable<bool> write_response(beast::tcp_stream& stream, app_context& app, const request& req, response& res,
                               const exchange& ex) {
  const bool keep_alive = req.keep_alive() && !app.draining;
  res.keep_alive(keep_alive);
  res.set("X-Request-Id", ex.request_id);
  // HEAD: the GET's status and headers, Content-Length included, and not one byte more
  // (a body here would be read by a keep-alive client as the next response).
  if (req.method() == http::verb::head) res.body().clear();
  const auto status = res.result_int();
  if (status == 503 && res.find(http::field::retry_after) == res.end())
    res.set(http::field::retry_after, std::to_string(unavailable_retry_after_seconds));
  ex.log(app, status, res.body().size());
  if (status >= 500)
    app.stats.http_responses_5xx++;
  else if (status >= 400)
    app.stats.http_responses_4xx++;
  stream.expires_after(to_duration(app.config.write_timeout));
  auto [wec, wn] = co_await http::async_write(stream, res, use_tuple);
  co_return !wec && keep_alive;
}

// The rate limiter's bucket: a valid API key's, else the peer address's. Only a key
// the server knows names a bucket: an unchecked header would let a client make a new
// bucket per request (never limited) and flush real clients' buckets out of the table.
std::string rate_bucket(const app_context& app, const request& req, std::string_view peer) {
  const auto authorization = req[http::field::authorization];
  constexpr std::string_view bearer = "Bearer ";
  if (app.access.enabled() && authorization.size() > bearer.size() && authorization.substr(0, bearer.size()) == bearer) {
    const auto presented = authorization.substr(bearer.size());
    // A digest, not the credential itself, is what the table keeps.
    if (app.access.find_key(presented)) return "k:" + std::to_string(std::hash<std::string_view>{}(presented));
  }
  return "a:" + std::string(peer);
}

// GATEWAY_RATE_LIMIT: a 429 when the client (its API key, else its address) is over
// its rate. Load balancer probes are not counted.
std::optional<response> over_rate(app_context& app, const request& req, std::string_view peer) {
  if (!app.rate) return std::nullopt;
  const auto target = req.target();
  if (target == "/healthz" || target == "/readyz") return std::nullopt;
  const std::string key = rate_bucket(app, req, peer);
  const long wait = app.rate->admit(key, std::chrono::steady_clock::now());
  if (wait == 0) return std::nullopt;
  auto res = error_response({core::error_code::too_many_requests, "request rate over the limit; retry later"}, req.version());
  res.set(http::field::retry_after, std::to_string(wait));
  // A browser reads Retry-After only from an answer its CORS rules let it see.
  add_cors_headers(app.config, req, res.base());
  return res;
}

std::string peer_address(const beast::tcp_stream& stream) {
  beast::error_code ec;
  auto endpoint = stream.socket().remote_endpoint(ec);
  return ec ? std::string() : endpoint.address().to_string();
}

}  // namespace

static awaitable<void> serve_connection(beast::tcp_stream stream, app_context& app, std::string pending, bool counted) {
  const std::string peer = peer_address(stream);
  beast::flat_buffer buffer;
  preload(buffer, std::move(pending));
  // A handed-back connection is kept alive between requests: the idle timeout applies.
  bool first = !counted;
  for (;;) {
    request_parser parser;
    parser.header_limit(static_cast<std::uint32_t>(app.config.max_header_bytes));
    parser.body_limit(app.config.max_body_bytes);
    if (!first && buffer.size() == 0) {
      const bool next = co_await await_next_request(stream, app, buffer);
      if (!next) break;
    }
    first = false;
    exchange ex{peer};
    const bool complete = co_await read_request(stream, app, buffer, parser, ex);
    if (!complete) break;
    request_context ctx{app, parser.get(), stream, buffer, {}, {}};
    ctx.request_id = ex.request_id;
    handler_result result = over_rate(app, ctx.req, peer);
    if (!result) result = co_await route(ctx);
    if (!result) {
      // A streaming handler owns the socket now (and closes or hands it back).
      if (ctx.stream_taken) {
        ex.log(app, 200, 0, /*stream=*/true);
        co_return;
      }
      break;
    }
    const bool keep_alive = co_await write_response(stream, app, ctx.req, *result, ex);
    if (!keep_alive) break;
  }
  close_connection(stream.socket(), app);
}

void start_connection(net::ip::tcp::socket socket, app_context& app, std::string pending, bool counted) {
  // Counted here, on the accepting thread, before its acceptor's next accept reads the
  // gauge against GATEWAY_MAX_CONNECTIONS (a coroutine that has not run yet would not
  // be); the other threads' acceptors may read it meanwhile (gateway/listener).
  if (!counted) app.stats.http_connections_open++;
  auto executor = socket.get_executor();
  net::co_spawn(executor, serve_connection(beast::tcp_stream(std::move(socket)), app, std::move(pending), counted),
                [&app](std::exception_ptr e) {
                  if (!e) return;
                  // close_connection was not reached; the socket closes with the coroutine.
                  app.stats.http_connections_open--;
                  try {
                    std::rethrow_exception(e);
                  } catch (const std::exception& ex) {
                    spdlog::error("connection ended by an exception: {}", ex.what());
                  }
                });
}

void close_connection(net::ip::tcp::socket& socket, app_context& app) {
  beast::error_code ignored;
  socket.shutdown(net::ip::tcp::socket::shutdown_send, ignored);
  socket.close(ignored);
  app.stats.http_connections_open--;
}

}  // namespace agw::gateway
