// The router (gateway/router): which handler a method and a segment list reach,
// the path parameters it fills in, 404 vs 405 (with Allow), and the one place
// exceptions become the contract's error bodies. Then the request target as a
// connection splits it before dispatch (trailing slash, percent-decoding, the
// query): that split is private to gateway/http_connection.cpp, so it is driven
// through start_connection() over a 127.0.0.1 socket pair.
#include "gateway/router.hpp"

#include <doctest/doctest.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/json/parse.hpp>
#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/api_error.hpp"
#include "core/storage/store_error.hpp"
#include "core/store_executor.hpp"
#include "gateway/http_connection.hpp"
#include "gateway/json_response.hpp"
#include "tests/gateway/app_fixture.hpp"

namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using namespace std::chrono_literals;
using agw::gateway::handler;
using agw::gateway::handler_result;
using agw::gateway::request_context;
using agw::gateway::router;

// What a route answers: its name, then the decoded path parameters and query, so a
// test sees exactly what the handler was given.
agw::gateway::awaitable<handler_result> echo(std::string name, request_context& ctx) {
  std::string body = name + "|";
  for (std::size_t i = 0; i < ctx.path_params.size(); ++i) body += (i ? "," : "") + ctx.path_params[i];
  body += "|";
  for (std::size_t i = 0; i < ctx.query.size(); ++i) body += (i ? "&" : "") + ctx.query[i].first + "=" + ctx.query[i].second;
  agw::gateway::response res{http::status::ok, ctx.req.version()};
  res.body() = std::move(body);
  res.prepare_payload();
  co_return res;
}
handler named(std::string name) {
  return [name](request_context& ctx) { return echo(name, ctx); };
}

// The API's route table (gateway/api/routes.cpp), with echoing handlers.
void add_api_routes(router& r) {
  using http::verb;
  r.add(verb::get, "/healthz", named("healthz"));
  r.add(verb::get, "/readyz", named("readyz"));
  r.add(verb::get, "/metrics", named("metrics"));
  r.add(verb::get, "/", named("index"));
  r.add(verb::head, "/", named("index_head"));
  r.add(verb::post, "/sessions", named("create_session"));
  r.add(verb::get, "/sessions", named("list_sessions"));
  r.add(verb::get, "/sessions/{}", named("get_session"));
  r.add(verb::patch, "/sessions/{}", named("patch_session"));
  r.add(verb::delete_, "/sessions/{}", named("delete_session"));
  r.add(verb::post, "/sessions/{}/messages", named("post_message"));
  r.add(verb::get, "/sessions/{}/messages", named("list_messages"));
  r.add(verb::post, "/sessions/{}/abort", named("abort_run"));
  r.add(verb::post, "/sessions/{}/rebuild", named("rebuild_messages"));
  r.add(verb::get, "/sessions/{}/events", named("session_events"));
  r.add(verb::get, "/sessions/{}/webhooks", named("list_webhooks"));
  r.add(verb::post, "/sessions/{}/webhooks/{}/redeliver", named("redeliver_webhook"));
}

struct dispatch_fixture {
  agw::test::app_fixture fx;
  beast::tcp_stream stream{fx.core.io};
  beast::flat_buffer buffer;

  agw::gateway::response dispatch(const router& r, http::verb method, const std::vector<std::string>& segments,
                                  unsigned version = 11) {
    agw::gateway::request req{method, "/ignored", version};
    request_context ctx{fx.app, req, stream, buffer, {}, {}};
    auto result = fx.core.await(r.dispatch(ctx, segments));
    REQUIRE(result.has_value());
    return std::move(*result);
  }
};

// {"error": {"code": ..., "message": ...}}: the code and the message.
std::pair<std::string, std::string> error_of(const agw::gateway::response& res) {
  auto body = boost::json::parse(res.body()).as_object().at("error").as_object();
  return {std::string(body.at("code").as_string()), std::string(body.at("message").as_string())};
}

TEST_CASE("router: method and segments reach one handler with its parameters; 404 and 405 otherwise") {
  dispatch_fixture d;
  router r;
  add_api_routes(r);
  struct row {
    http::verb method;
    std::vector<std::string> segments;
    unsigned status;
    std::string body;   // 200: "name|params|", else the error code
    std::string allow;  // 405 only
  };
  using http::verb;
  const std::vector<row> rows = {
      {verb::get, {}, 200, "index||", ""},
      {verb::head, {}, 200, "index_head||", ""},  // registered on its own: that handler, not GET's
      {verb::post, {}, 405, "method_not_allowed", "GET, HEAD, OPTIONS"},
      {verb::get, {"healthz"}, 200, "healthz||", ""},
      {verb::head, {"healthz"}, 200, "healthz||", ""},  // GET's handler serves HEAD (the connection drops the body)
      {verb::head, {"sessions", "s1", "abort"}, 405, "method_not_allowed", "POST, OPTIONS"},  // no GET: no HEAD
      {verb::head, {"nope"}, 404, "not_found", ""},
      {verb::get, {"sessions"}, 200, "list_sessions||", ""},
      {verb::post, {"sessions"}, 200, "create_session||", ""},
      {verb::put, {"sessions"}, 405, "method_not_allowed", "POST, GET, HEAD, OPTIONS"},  // in registration order
      {verb::get, {"sessions", "s1"}, 200, "get_session|s1|", ""},
      {verb::patch, {"sessions", "s1"}, 200, "patch_session|s1|", ""},
      {verb::delete_, {"sessions", "s1"}, 200, "delete_session|s1|", ""},
      {verb::post, {"sessions", "s1"}, 405, "method_not_allowed", "GET, HEAD, PATCH, DELETE, OPTIONS"},
      {verb::get, {"sessions", "s1", "messages"}, 200, "list_messages|s1|", ""},
      {verb::post, {"sessions", "s1", "messages"}, 200, "post_message|s1|", ""},
      {verb::delete_, {"sessions", "s1", "messages"}, 405, "method_not_allowed", "POST, GET, HEAD, OPTIONS"},
      {verb::get, {"sessions", "s1", "abort"}, 405, "method_not_allowed", "POST, OPTIONS"},
      {verb::post, {"sessions", "s1", "webhooks", "d1", "redeliver"}, 200, "redeliver_webhook|s1,d1|", ""},
      {verb::get, {"sessions", "s1", "webhooks", "d1", "redeliver"}, 405, "method_not_allowed", "POST, OPTIONS"},
      // A parameter is any one segment, the empty one included (the services check ids).
      {verb::get, {"sessions", "", "messages"}, 200, "list_messages||", ""},
      {verb::get, {"sessions", "a/b"}, 200, "get_session|a/b|", ""},  // segments arrive decoded
      // Literal segments match exactly: case and count.
      {verb::get, {"Sessions"}, 404, "not_found", ""},
      {verb::get, {"sessions", "s1", "unknown"}, 404, "not_found", ""},
      {verb::get, {"sessions", "s1", "messages", "m1"}, 404, "not_found", ""},
      {verb::get, {"healthz", "x"}, 404, "not_found", ""},
      {verb::get, {""}, 404, "not_found", ""},  // "/" is no segments, not one empty one
      {verb::delete_, {"nope"}, 404, "not_found", ""},
  };
  for (const auto& row : rows) {
    std::string path;
    for (const auto& s : row.segments) path += "/" + s;
    CAPTURE(path);
    CAPTURE(http::to_string(row.method));
    auto res = d.dispatch(r, row.method, row.segments);
    CHECK(res.result_int() == row.status);
    if (row.status == 200) {
      CHECK(res.body() == row.body);
      CHECK(res.find(http::field::allow) == res.end());
      continue;
    }
    auto [code, message] = error_of(res);
    CHECK(code == row.body);
    CHECK(res[http::field::content_type] == "application/json; charset=utf-8");
    if (row.status == 405) {
      CHECK(message == "method not allowed on this path");
      CHECK(res[http::field::allow] == row.allow);
    } else {
      CHECK(message == "no such route");
      CHECK(res.find(http::field::allow) == res.end());
    }
  }
}

TEST_CASE("router: patterns are split like request paths; the first matching route wins") {
  dispatch_fixture d;
  router r;
  r.add(http::verb::get, "/a/{}", named("first"));
  r.add(http::verb::get, "a/{}/", named("shadowed"));  // the same segments: never reached
  r.add(http::verb::get, "/a/fixed", named("fixed"));  // after a parameter that matches it too
  r.add(http::verb::post, "/a/fixed", named("fixed_post"));
  CHECK(d.dispatch(r, http::verb::get, {"a", "x"}).body() == "first|x|");
  CHECK(d.dispatch(r, http::verb::get, {"a", "fixed"}).body() == "first|fixed|");
  CHECK(d.dispatch(r, http::verb::post, {"a", "fixed"}).body() == "fixed_post||");
  // A 405 lists each matching route's method once, in registration order.
  auto res = d.dispatch(r, http::verb::delete_, {"a", "fixed"});
  CHECK(res.result_int() == 405);
  CHECK(res[http::field::allow] == "GET, HEAD, POST, OPTIONS");
}

TEST_CASE("router: OPTIONS on a known path is a 204 with Allow and no body; on an unknown one a 404") {
  dispatch_fixture d;
  router r;
  add_api_routes(r);
  auto res = d.dispatch(r, http::verb::options, {"sessions", "s1"});
  CHECK(res.result_int() == 204);
  CHECK(res[http::field::allow] == "GET, HEAD, PATCH, DELETE, OPTIONS");
  CHECK(res.body().empty());
  CHECK(res.find(http::field::content_length) == res.end());
  auto root = d.dispatch(r, http::verb::options, {});
  CHECK(root.result_int() == 204);
  CHECK(root[http::field::allow] == "GET, HEAD, OPTIONS");
  CHECK(d.dispatch(r, http::verb::options, {"nope"}).result_int() == 404);
}

TEST_CASE("router: errors keep the request's HTTP version") {
  dispatch_fixture d;
  router r;
  add_api_routes(r);
  CHECK(d.dispatch(r, http::verb::get, {"nope"}, 10).version() == 10);
  CHECK(d.dispatch(r, http::verb::post, {}, 10).version() == 10);
  CHECK(d.dispatch(r, http::verb::get, {"nope"}, 11).version() == 11);
}

agw::gateway::awaitable<handler_result> throw_api_error(request_context&) {
  throw agw::core::api_error(agw::core::error_code::run_in_progress, "a run is in progress",
                             boost::json::object{{"run_id", "r1"}});
  co_return std::nullopt;
}
agw::gateway::awaitable<handler_result> throw_store_busy(request_context&) {
  throw agw::core::store_busy();
  co_return std::nullopt;
}
agw::gateway::awaitable<handler_result> throw_store_error(request_context&) {
  throw agw::core::store_error("disk I/O error");
  co_return std::nullopt;
}
agw::gateway::awaitable<handler_result> throw_other(request_context&) {
  throw std::logic_error("a bug");
  co_return std::nullopt;
}

TEST_CASE("router: a handler's exception becomes the contract's error response, once, here") {
  dispatch_fixture d;
  router r;
  r.add(http::verb::post, "/api", throw_api_error);
  r.add(http::verb::post, "/busy", throw_store_busy);
  r.add(http::verb::post, "/store", throw_store_error);
  r.add(http::verb::post, "/other", throw_other);
  struct row {
    std::string segment;
    unsigned status;
    std::string code, message;
  };
  const std::vector<row> rows = {
      {"api", 409, "run_in_progress", "a run is in progress"},
      {"busy", 503, "unavailable", "storage is overloaded, retry later"},
      {"store", 503, "unavailable", "storage is unavailable"},  // the store's own text stays in the log
      {"other", 500, "internal", "internal error"},
  };
  for (const auto& row : rows) {
    CAPTURE(row.segment);
    auto res = d.dispatch(r, http::verb::post, {row.segment}, 10);
    CHECK(res.result_int() == row.status);
    CHECK(res.version() == 10);
    CHECK(error_of(res) == std::pair{row.code, row.message});
  }
  // The api_error's extra fields ride along in the error object.
  auto res = d.dispatch(r, http::verb::post, {"api"});
  CHECK(boost::json::parse(res.body()).as_object().at("error").as_object().at("run_id").as_string() == "r1");
}

// One request over a real connection (start_connection on 127.0.0.1) to a server
// whose routes echo what they were given; returns the response.
// `head`: the request is a HEAD, so the answer has no body whatever its Content-Length.
agw::gateway::response over_connection(agw::test::app_fixture& fx, const std::string& request_text, bool head = false) {
  using tcp = net::ip::tcp;
  auto& io = fx.core.io;
  tcp::acceptor acceptor(io, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
  tcp::socket client(io);
  client.connect(acceptor.local_endpoint());
  tcp::socket server(io);
  acceptor.accept(server);
  agw::gateway::start_connection(std::move(server), fx.app);
  net::write(client, net::buffer(request_text));
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.skip(head);
  bool done = false;
  beast::error_code error;
  http::async_read(client, buffer, parser, [&](beast::error_code ec, std::size_t) {
    error = ec;
    done = true;
  });
  const auto until = std::chrono::steady_clock::now() + 5s;
  io.restart();
  while (!done && std::chrono::steady_clock::now() < until) io.run_one_for(10ms);
  REQUIRE(done);
  REQUIRE_FALSE(error);
  // "Connection: close": the server ends the connection after the answer.
  boost::system::error_code ec;
  char byte;
  client.read_some(net::buffer(&byte, 1), ec);
  CHECK(ec == net::error::eof);  // and no byte before it: a HEAD answer has no body
  return parser.release();
}

std::string get(const std::string& target) { return "GET " + target + " HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"; }

TEST_CASE("request target: trailing slash, percent-decoded segments, the query in order and decoded") {
  agw::test::app_fixture fx;
  add_api_routes(fx.app.routes);
  struct row {
    std::string target;
    unsigned status;
    std::string body;  // 200: "name|params|query", else the error code
  };
  const std::vector<row> rows = {
      {"/sessions", 200, "list_sessions||"},
      {"/sessions/", 200, "list_sessions||"},  // one trailing slash is dropped
      {"/sessions//", 200, "get_session||"},   // only one: the other is an empty segment
      {"/sessions/s1/", 200, "get_session|s1|"},
      {"/sessions//messages", 200, "list_messages||"},
      {"/", 200, "index||"},
      {"//", 404, "not_found"},                      // two empty segments: the last is dropped, one empty segment is not "/"
      {"/sessions/a%2Fb", 200, "get_session|a/b|"},  // an encoded slash stays inside its segment
      {"/sessions/a%20b/messages", 200, "list_messages|a b|"},
      {"/sessions/caf%C3%A9", 200, "get_session|caf\xC3\xA9|"},
      {"/sessions/a+b", 200, "get_session|a+b|"},                            // '+' is a plus in a path
      {"/%73essions", 200, "list_sessions||"},                               // literal segments compare decoded
      {"/sessions?limit=5&limit=6", 200, "list_sessions||limit=5&limit=6"},  // duplicates kept, in order
      {"/sessions?b=x%20y&a=1", 200, "list_sessions||b=x y&a=1"},
      {"/sessions?q=a+b", 200, "list_sessions||q=a b"},  // '+' is a space in a query
      {"/sessions?q=a%2Bb%26c%3Dd", 200, "list_sessions||q=a+b&c=d"},
      {"/sessions?flag&empty=", 200, "list_sessions||flag=&empty="},  // no value and an empty one look alike
      {"/sessions?", 200, "list_sessions||"},                         // a bare '?' asks nothing
      {"/sessions?limit=5&", 200, "list_sessions||limit=5"},          // nor does a trailing '&'
      {"/sessions?=x", 200, "list_sessions||=x"},                     // an empty name with a value is still a parameter
      {"/sessions/?x=1", 200, "list_sessions||x=1"},
      {"/sessions/%zz", 400, "bad_request"},
      {"sessions", 400, "bad_request"},  // not origin-form
  };
  for (const auto& row : rows) {
    CAPTURE(row.target);
    auto res = over_connection(fx, get(row.target));
    CHECK(res.result_int() == row.status);
    if (row.status == 200)
      CHECK(res.body() == row.body);
    else
      CHECK(error_of(res).first == row.body);
    if (row.status == 400) CHECK(error_of(res).second == "malformed request target");
  }
}

TEST_CASE("request target: HEAD reaches the HEAD route as registered, else the GET route; no body is written") {
  agw::test::app_fixture fx;
  add_api_routes(fx.app.routes);
  auto res = over_connection(fx, "HEAD / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", true);
  CHECK(res.result_int() == 200);
  // The echo wrote "index_head||" (12 bytes): its length is announced, its bytes are not sent.
  CHECK(res[http::field::content_length] == "12");
  CHECK(res.body().empty());
  auto via_get = over_connection(fx, "HEAD /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", true);
  CHECK(via_get.result_int() == 200);
  CHECK(via_get[http::field::content_length] == std::to_string(std::string("healthz||").size()));
}

}  // namespace
