// Access and run logs, read from the real binary's stderr: one access line per
// request and one line per run, each with the request id that the response's
// X-Request-Id carries (the client's when sane, else a made one); no query strings,
// credentials or message contents at info; GATEWAY_LOG_FORMAT=json lines parse.
#include <doctest/doctest.h>

#include <boost/json/parse.hpp>
#include <sstream>

#include "tests/support/gateway_process.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/sse_reader.hpp"

using namespace agw::test;
using namespace agw::test::runs;

namespace {

// The log's lines that contain every one of `needles`.
std::vector<std::string> lines_with(const std::string& log, const std::vector<std::string>& needles) {
  std::vector<std::string> out;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    bool all = true;
    for (const auto& n : needles) all = all && line.find(n) != std::string::npos;
    if (all) out.push_back(line);
  }
  return out;
}

bool is_made_id(const std::string& id) {
  return id.size() == 16 && id.find_first_not_of("0123456789abcdef") == std::string::npos;
}

const gateway_process::env_map info_logs{{"GATEWAY_LOG_LEVEL", "info"}};

}  // namespace

TEST_CASE("logs: one access line per request with the request id the response carries") {
  gateway_process gw(info_logs);
  auto given = http_call(gw.port(), "GET", "/sessions?limit=5&metadata.note=query-secret", {},
                         {{"X-Request-Id", "client-id-42"}, {"Authorization", "Bearer sk-very-secret"}});
  CHECK(given.status == 200);
  CHECK(given.header("X-Request-Id") == "client-id-42");
  auto made = http_call(gw.port(), "GET", "/nope", {}, {{"X-Request-Id", "has spaces and \"quotes\""}});
  CHECK(made.status == 404);
  const std::string made_id = made.header("X-Request-Id");
  CHECK(is_made_id(made_id));
  auto too_long = http_call(gw.port(), "GET", "/healthz", {}, {{"X-Request-Id", std::string(200, 'a')}});
  CHECK(is_made_id(too_long.header("X-Request-Id")));
  auto anonymous = http_call(gw.port(), "GET", "/healthz", {}, {});
  CHECK(is_made_id(anonymous.header("X-Request-Id")));
  CHECK(anonymous.header("X-Request-Id") != too_long.header("X-Request-Id"));

  REQUIRE(eventually([&] { return !lines_with(gw.stderr_text(), {made_id}).empty(); }, 5s));
  const auto log = gw.stderr_text();
  INFO("log:\n" << log);
  auto first = lines_with(log, {"access request_id=client-id-42 "});
  REQUIRE(first.size() == 1);
  CHECK(first[0].find("method=GET path=/sessions status=200") != std::string::npos);
  CHECK(first[0].find("peer=127.0.0.1") != std::string::npos);
  CHECK(lines_with(log, {"access request_id=" + made_id + " ", "path=/nope status=404"}).size() == 1);
  CHECK(log.find("query-secret") == std::string::npos);
  CHECK(log.find("sk-very-secret") == std::string::npos);
  CHECK(log.find("quotes") == std::string::npos);
}

TEST_CASE("logs: one line per run with its figures and no contents; refusals and streams carry ids too") {
  gateway_process gw(info_logs);
  const std::string sid = create_mock_session(gw.port(), R"({"tokens":5})");
  auto run = start_message(gw.port(), sid, "my-private-words", {{"X-Request-Id", "run-request-7"}});
  REQUIRE(run->head.status == 200);
  CHECK(run->head.header("X-Request-Id") == "run-request-7");
  REQUIRE(run->read_to_end(10s));
  const std::string run_id = run->head.header("X-Run-Id");

  http_client bad(gw.port());
  bad.send_raw("GET /healthz HTTP/1.1\r\n\r\n");  // no Host: refused before routing
  auto refused = bad.read_reply();
  CHECK(refused.status == 400);
  CHECK(is_made_id(refused.header("X-Request-Id")));

  REQUIRE(eventually([&] { return !lines_with(gw.stderr_text(), {"run request_id=run-request-7"}).empty(); }, 5s));
  const auto log = gw.stderr_text();
  INFO("log:\n" << log);
  auto lines = lines_with(log, {"run request_id=run-request-7 "});
  REQUIRE(lines.size() == 1);
  for (const auto& field : {"session=" + sid, "run_id=" + run_id, std::string("status=complete"), std::string("duration_ms="),
                            std::string("events="), std::string("output_tokens=5"), std::string("provider=mock")})
    CHECK(lines[0].find(field) != std::string::npos);
  CHECK(lines_with(log, {"access request_id=run-request-7 ", "method=POST", "status=200", "stream=1"}).size() == 1);
  CHECK(lines_with(log, {"access request_id=" + refused.header("X-Request-Id") + " ", "status=400"}).size() == 1);
  CHECK(log.find("my-private-words") == std::string::npos);
}

TEST_CASE("logs: GATEWAY_LOG_FORMAT=json writes one JSON object per line, messages escaped") {
  gateway_process gw(gateway_process::env_map{{"GATEWAY_LOG_LEVEL", "info"}, {"GATEWAY_LOG_FORMAT", "json"}});
  CHECK(http_call(gw.port(), "GET", "/sessions", {}, {{"X-Request-Id", "json-1"}}).status == 200);
  // A path with a quote and a backslash: its access line is valid JSON only if escaped.
  http_client odd(gw.port());
  odd.send_raw("GET /nope\"x\\y HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  CHECK(odd.read_reply().status == 400);  // Beast takes it; the URL parser refuses it
  REQUIRE(eventually([&] { return !lines_with(gw.stderr_text(), {"json-1"}).empty(); }, 5s));
  const auto log = gw.stderr_text();
  INFO("log:\n" << log);
  std::istringstream in(log);
  int parsed = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    boost::system::error_code ec;
    auto v = boost::json::parse(line, ec);
    CHECK_MESSAGE(!ec, line);
    if (ec) continue;
    REQUIRE(v.is_object());
    CHECK(v.as_object().contains("time"));
    CHECK(v.as_object().contains("level"));
    CHECK(v.as_object().at("message").is_string());
    ++parsed;
  }
  CHECK(parsed >= 3);  // the start-up line and two access lines at least
  CHECK(lines_with(log, {R"("message":"access request_id=json-1 )"}).size() == 1);
  CHECK(lines_with(log, {R"(path=/nope\"x\\y status=400)"}).size() == 1);
}
