// Bad input against the sessions API, table-driven. Every case asserts the exact
// status, the contract's error body {"error":{"code","message"}} with the right
// code, and that stored state did not change (the whole list and the probed
// session read back identical). Framing errors must also close the connection;
// other errors must leave it usable. The server must survive all of them.
#include <doctest/doctest.h>

#include <boost/algorithm/string/replace.hpp>
#include <set>

#include "tests/support/gateway_process.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/session_fixtures.hpp"

using namespace agw::test;
using namespace agw::test::fixtures;

namespace {

constexpr std::size_t max_body = 4096;  // GATEWAY_MAX_BODY_BYTES of the server under test

struct bad_case {
  std::string name;
  std::string request;  // raw bytes; "{id}" becomes the probe session's id
  int status;
  std::string code;
  bool closes = false;     // the server must close the connection after answering
  std::string allow = {};  // for 405: the methods the Allow header must list
};

std::string post_json(std::string_view body) { return raw_request("POST", "/sessions", body, json_headers, true); }
std::string patch_json(std::string_view body) { return raw_request("PATCH", "/sessions/{id}", body, json_headers, true); }
std::string get(std::string_view target) { return raw_request("GET", target); }
std::string with_type(std::string_view method, std::string_view target, std::string_view body, std::string type) {
  return raw_request(method, target, body, {{"Content-Type", std::move(type)}}, true);
}

std::string nested_config(int depth) {
  std::string open, close;
  for (int i = 0; i < depth; ++i) {
    open += "[";
    close += "]";
  }
  return R"({"config":{"deep":)" + open + close + "}}";
}

std::string many_metadata(int n) {
  std::string body = R"({"metadata":{)";
  for (int i = 0; i < n; ++i) body += (i ? "," : "") + std::string("\"k") + std::to_string(i) + "\":\"v\"";
  return body + "}}";
}

std::vector<bad_case> bad_cases() {
  const std::string big(10 * 1024, 'a');  // a 10 kB id
  const std::string valid = R"({"title":"would be stored"})";
  const std::string oversized = R"({"title":")" + std::string(max_body + 1000, 'x') + R"("})";
  std::vector<bad_case> t = {
      // --- malformed JSON --------------------------------------------------------------
      {"truncated object", post_json("{"), 400, "bad_request"},
      {"truncated: missing closing brace", post_json(R"({"title":"x")"), 400, "bad_request"},
      {"truncated after a colon", post_json(R"({"title":)"), 400, "bad_request"},
      {"truncated inside a string", post_json(R"({"title":"x)"), 400, "bad_request"},
      {"trailing garbage", post_json(R"({"title":"x"}garbage)"), 400, "bad_request"},
      {"two JSON values", post_json(R"({"title":"x"} {})"), 400, "bad_request"},
      {"unquoted key", post_json(R"({title:"x"})"), 400, "bad_request"},
      {"single quotes", post_json(R"({'title':'x'})"), 400, "bad_request"},
      {"trailing comma", post_json(R"({"title":"x",})"), 400, "bad_request"},
      {"missing comma", post_json(R"({"title":"x" "agent_name":"y"})"), 400, "bad_request"},
      {"NaN literal", post_json(R"({"config":{"temperature":NaN}})"), 400, "bad_request"},
      {"nesting 100 deep", post_json(nested_config(100)), 400, "bad_request"},
      {"PATCH with an empty JSON body", patch_json(""), 400, "bad_request"},
      {"PATCH truncated", patch_json(R"({"title":"x")"), 400, "bad_request"},
      // --- bodies that are not objects ---------------------------------------------------
      {"body is an array", post_json("[]"), 400, "bad_request"},
      {"body is an array of an object", post_json(R"([{"title":"x"}])"), 400, "bad_request"},
      {"body is a string", post_json(R"("session")"), 400, "bad_request"},
      {"body is a number", post_json("42"), 400, "bad_request"},
      {"body is null", post_json("null"), 400, "bad_request"},
      {"body is true", post_json("true"), 400, "bad_request"},
      {"PATCH body is an array", patch_json("[]"), 400, "bad_request"},
      {"PATCH body is null", patch_json("null"), 400, "bad_request"},
      {"PATCH body is a string", patch_json(R"("inactive")"), 400, "bad_request"},
      // --- invalid UTF-8 / UTF-16 in strings ---------------------------------------------
      {"invalid UTF-8 byte 0xff in a string", post_json("{\"title\":\"a\xff\"}"), 400, "bad_request"},
      {"truncated UTF-8 sequence", post_json("{\"title\":\"\xc3\"}"), 400, "bad_request"},
      {"overlong UTF-8 encoding", post_json("{\"title\":\"\xc0\xaf\"}"), 400, "bad_request"},
      {"UTF-8 encoded surrogate", post_json("{\"title\":\"\xed\xa0\x80\"}"), 400, "bad_request"},
      {"invalid UTF-8 in a metadata key", post_json("{\"metadata\":{\"\xfe\":\"x\"}}"), 400, "bad_request"},
      {"lone surrogate escape", post_json(R"({"title":"\ud800"})"), 400, "bad_request"},
      {"PATCH invalid UTF-8", patch_json("{\"title\":\"\xff\xfe\"}"), 400, "bad_request"},
      // --- wrong types and values on create ----------------------------------------------
      {"title is a number", post_json(R"({"title":5})"), 400, "bad_request"},
      {"title is an object", post_json(R"({"title":{"a":"b"}})"), 400, "bad_request"},
      {"title is 1001 bytes", post_json(R"({"title":")" + std::string(1001, 't') + R"("})"), 400, "bad_request"},
      {"agent_name is a number", post_json(R"({"agent_name":7})"), 400, "bad_request"},
      {"agent_name is empty", post_json(R"({"agent_name":""})"), 400, "bad_request"},
      {"agent_name is null", post_json(R"({"agent_name":null})"), 400, "bad_request"},
      {"metadata is an array", post_json(R"({"metadata":["a"]})"), 400, "bad_request"},
      {"metadata is a string", post_json(R"({"metadata":"a=b"})"), 400, "bad_request"},
      {"metadata value is a number", post_json(R"({"metadata":{"k":1}})"), 400, "bad_request"},
      {"metadata value is null", post_json(R"({"metadata":{"k":null}})"), 400, "bad_request"},
      {"metadata value is an object", post_json(R"({"metadata":{"k":{"x":"y"}}})"), 400, "bad_request"},
      {"metadata has 65 entries", post_json(many_metadata(65)), 400, "bad_request"},
      {"metadata key is empty", post_json(R"({"metadata":{"":"v"}})"), 400, "bad_request"},
      {"metadata key is 129 bytes", post_json(R"({"metadata":{")" + std::string(129, 'k') + R"(":"v"}})"), 400, "bad_request"},
      {"metadata value is 1025 bytes", post_json(R"({"metadata":{"k":")" + std::string(1025, 'v') + R"("}})"), 400,
       "bad_request"},
      {"scopes value is a bool", post_json(R"({"scopes":{"org":true}})"), 400, "bad_request"},
      {"scopes is a number", post_json(R"({"scopes":3})"), 400, "bad_request"},
      {"config is an array", post_json(R"({"config":[]})"), 400, "bad_request"},
      {"config is a string", post_json(R"({"config":"mock"})"), 400, "bad_request"},
      {"config.provider is unknown", post_json(R"({"config":{"provider":"claude-direct"}})"), 400, "bad_request"},
      {"config.provider is a number", post_json(R"({"config":{"provider":1}})"), 400, "bad_request"},
      {"config.model is a number", post_json(R"({"config":{"model":4}})"), 400, "bad_request"},
      {"config.temperature is a string", post_json(R"({"config":{"temperature":"0.5"}})"), 400, "bad_request"},
      {"config.temperature above 2", post_json(R"({"config":{"temperature":2.5}})"), 400, "bad_request"},
      {"config.temperature below 0", post_json(R"({"config":{"temperature":-0.1}})"), 400, "bad_request"},
      {"config.max_tokens negative", post_json(R"({"config":{"max_tokens":-5}})"), 400, "bad_request"},
      {"config.max_tokens zero", post_json(R"({"config":{"max_tokens":0}})"), 400, "bad_request"},
      {"config.max_tokens fractional", post_json(R"({"config":{"max_tokens":1.5}})"), 400, "bad_request"},
      {"config.max_tokens a string", post_json(R"({"config":{"max_tokens":"100"}})"), 400, "bad_request"},
      {"config.mock is not an object", post_json(R"({"config":{"mock":true}})"), 400, "bad_request"},
      {"config.mock.tokens is a string", post_json(R"({"config":{"mock":{"tokens":"5"}}})"), 400, "bad_request"},
      {"config.mock.tokens negative", post_json(R"({"config":{"mock":{"tokens":-1}}})"), 400, "bad_request"},
      {"config.mock.tokens_per_second zero", post_json(R"({"config":{"mock":{"tokens_per_second":0}}})"), 400, "bad_request"},
      {"config.mock.think_ms too large", post_json(R"({"config":{"mock":{"think_ms":600001}}})"), 400, "bad_request"},
      {"config.mock.tool_calls not a list", post_json(R"({"config":{"mock":{"tool_calls":{"name":"x"}}}})"), 400, "bad_request"},
      {"config.mock.tool_calls entry without name", post_json(R"({"config":{"mock":{"tool_calls":[{"args":{}}]}}})"), 400,
       "bad_request"},
      {"config.mock.plan of numbers", post_json(R"({"config":{"mock":{"plan":[1,2]}}})"), 400, "bad_request"},
      {"valid fields plus one bad field", post_json(R"({"title":"ok","metadata":{"a":"b"},"scopes":{"s":1}})"), 400,
       "bad_request"},
      // --- wrong types and values on PATCH (the probe session must stay as it is) -------
      {"PATCH title is a number", patch_json(R"({"title":5})"), 400, "bad_request"},
      {"PATCH metadata is not an object", patch_json(R"({"metadata":"x"})"), 400, "bad_request"},
      {"PATCH metadata value is a number", patch_json(R"({"metadata":{"k":2}})"), 400, "bad_request"},
      {"PATCH config is not an object", patch_json(R"({"config":[1]})"), 400, "bad_request"},
      {"PATCH config.provider unknown", patch_json(R"({"config":{"provider":"nope"}})"), 400, "bad_request"},
      {"PATCH config.temperature out of range", patch_json(R"({"config":{"temperature":3}})"), 400, "bad_request"},
      {"PATCH config.mock.tokens a string", patch_json(R"({"config":{"mock":{"tokens":"x"}}})"), 400, "bad_request"},
      {"PATCH status bogus", patch_json(R"({"status":"bogus"})"), 400, "bad_request"},
      {"PATCH status error (not client-settable)", patch_json(R"({"status":"error"})"), 400, "bad_request"},
      {"PATCH status null", patch_json(R"({"status":null})"), 400, "bad_request"},
      {"PATCH status a number", patch_json(R"({"status":1})"), 400, "bad_request"},
      {"PATCH status wrong case", patch_json(R"({"status":"ACTIVE"})"), 400, "bad_request"},
      {"PATCH good title and bad status: nothing applied", patch_json(R"({"title":"changed","status":"bogus"})"), 400,
       "bad_request"},
      {"PATCH good metadata and bad config: nothing applied", patch_json(R"({"metadata":{"n":"1"},"config":{"max_tokens":-1}})"),
       400, "bad_request"},
      // --- too large --------------------------------------------------------------------
      {"body above GATEWAY_MAX_BODY_BYTES (Content-Length)", post_json(oversized), 413, "payload_too_large", true},
      {"body above GATEWAY_MAX_BODY_BYTES (chunked)",
       raw_request("POST", "/sessions", chunked_body({oversized.substr(0, 3000), oversized.substr(3000)}),
                   {{"Content-Type", "application/json"}, {"Transfer-Encoding", "chunked"}}),
       413, "payload_too_large", true},
      {"PATCH body above GATEWAY_MAX_BODY_BYTES", patch_json(oversized), 413, "payload_too_large", true},
      {"Expect: 100-continue with a too large Content-Length (no body sent)",
       "POST /sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nExpect: 100-continue\r\n"
       "Content-Length: 100000\r\n\r\n",
       413, "payload_too_large", true},
      {"header block above the header limit", raw_request("GET", "/healthz", "", {{"X-Padding", std::string(20000, 'p')}}), 431,
       "request_header_fields_too_large", true},
      {"many headers above the header limit",
       [] {
         header_list h;
         for (int i = 0; i < 400; ++i) h.emplace_back("X-H" + std::to_string(i), std::string(60, 'h'));
         return raw_request("GET", "/healthz", "", h);
       }(),
       431, "request_header_fields_too_large", true},
      // --- media type -------------------------------------------------------------------
      {"no Content-Type with a JSON body", raw_request("POST", "/sessions", valid), 415, "unsupported_media_type"},
      {"Content-Type text/plain", with_type("POST", "/sessions", valid, "text/plain"), 415, "unsupported_media_type"},
      {"Content-Type application/xml", with_type("POST", "/sessions", valid, "application/xml"), 415, "unsupported_media_type"},
      {"Content-Type application/json; charset=latin1", with_type("POST", "/sessions", valid, "application/json; charset=latin1"),
       415, "unsupported_media_type"},
      {"Content-Type form-urlencoded", with_type("POST", "/sessions", "title=x", "application/x-www-form-urlencoded"), 415,
       "unsupported_media_type"},
      {"Content-Type multipart/form-data", with_type("POST", "/sessions", valid, "multipart/form-data; boundary=x"), 415,
       "unsupported_media_type"},
      {"Content-Type application/jsonx", with_type("POST", "/sessions", valid, "application/jsonx"), 415,
       "unsupported_media_type"},
      {"Content-Type empty", with_type("POST", "/sessions", valid, ""), 415, "unsupported_media_type"},
      {"PATCH Content-Type text/plain", with_type("PATCH", "/sessions/{id}", R"({"title":"t"})", "text/plain"), 415,
       "unsupported_media_type"},
      {"PATCH without Content-Type", raw_request("PATCH", "/sessions/{id}", R"({"title":"t"})"), 415, "unsupported_media_type"},
      {"PATCH charset=iso-8859-1",
       with_type("PATCH", "/sessions/{id}", R"({"title":"t"})", "application/json;charset=iso-8859-1"), 415,
       "unsupported_media_type"},
      // --- ids that cannot exist --------------------------------------------------------
      {"id ../x", get("/sessions/../x"), 404, "not_found"},
      {"id %00", get("/sessions/%00"), 404, "not_found"},
      {"id %2e%2e", get("/sessions/%2e%2e"), 404, "not_found"},
      {"id %2F", get("/sessions/%2F"), 404, "not_found"},
      {"id %2e%2e%2fhealthz", get("/sessions/%2e%2e%2fhealthz"), 404, "not_found"},
      {"a 10 kB id (GET)", get("/sessions/" + big), 404, "not_found"},
      {"a 10 kB id (PATCH)", raw_request("PATCH", "/sessions/" + big, R"({"title":"t"})", json_headers), 404, "not_found"},
      {"a 10 kB id (DELETE)", raw_request("DELETE", "/sessions/" + big), 404, "not_found"},
      {"a non-UUID id (GET)", get("/sessions/not-a-uuid"), 404, "not_found"},
      {"a non-UUID id (DELETE)", raw_request("DELETE", "/sessions/not-a-uuid"), 404, "not_found"},
      {"a non-UUID id (PATCH)", raw_request("PATCH", "/sessions/1", R"({"title":"t"})", json_headers), 404, "not_found"},
      {"the probe id with a suffix", get("/sessions/{id}-x"), 404, "not_found"},
      {"an unknown UUID (GET)", get("/sessions/00000000-0000-4000-8000-000000000000"), 404, "not_found"},
      {"an unknown UUID (PATCH)",
       raw_request("PATCH", "/sessions/00000000-0000-4000-8000-000000000000", R"({"title":"t"})", json_headers), 404,
       "not_found"},
      {"an unknown UUID (DELETE)", raw_request("DELETE", "/sessions/00000000-0000-4000-8000-000000000000"), 404, "not_found"},
      {"a malformed percent escape in the path", get("/sessions/%zz"), 400, "bad_request"},
      // --- list query values ------------------------------------------------------------
      {"limit=-1", get("/sessions?limit=-1"), 400, "bad_request"},
      {"limit=abc", get("/sessions?limit=abc"), 400, "bad_request"},
      {"limit=1.5", get("/sessions?limit=1.5"), 400, "bad_request"},
      {"limit= (empty)", get("/sessions?limit="), 400, "bad_request"},
      {"limit (no value)", get("/sessions?limit"), 400, "bad_request"},
      {"limit=1e3", get("/sessions?limit=1e3"), 400, "bad_request"},
      {"limit=0x10", get("/sessions?limit=0x10"), 400, "bad_request"},
      {"limit=+5", get("/sessions?limit=%2B5"), 400, "bad_request"},
      {"offset=-1", get("/sessions?offset=-1"), 400, "bad_request"},
      {"offset=abc", get("/sessions?offset=abc"), 400, "bad_request"},
      {"offset=1.5", get("/sessions?offset=1.5"), 400, "bad_request"},
      {"offset= (empty)", get("/sessions?offset="), 400, "bad_request"},
      {"offset=1e3", get("/sessions?offset=1e3"), 400, "bad_request"},
      {"duplicate limit", get("/sessions?limit=1&limit=2"), 400, "bad_request"},
      {"duplicate offset", get("/sessions?offset=0&offset=0"), 400, "bad_request"},
      {"duplicate metadata filter", get("/sessions?metadata.a=1&metadata.a=2"), 400, "bad_request"},
      {"status=bogus", get("/sessions?status=bogus"), 400, "bad_request"},
      {"unknown query parameter", get("/sessions?foo=bar"), 400, "bad_request"},
      {"misspelt filter", get("/sessions?metdata.team=red"), 400, "bad_request"},
      {"filter with an empty key", get("/sessions?metadata.=x"), 400, "bad_request"},
      // --- routes and methods -----------------------------------------------------------
      {"unknown route", get("/nope"), 404, "not_found"},
      {"a path below the page at /", get("/index.html/x"), 404, "not_found"},
      {"root with a method it does not take", raw_request("DELETE", "/", "", {}), 405, "method_not_allowed", false,
       "GET,HEAD,OPTIONS"},
      {"unknown sub-resource", get("/sessions/{id}/nope"), 404, "not_found"},
      {"unknown route, POST with a body", raw_request("POST", "/nope", valid, json_headers), 404, "not_found"},
      {"routes are case-sensitive", get("/SESSIONS"), 404, "not_found"},
      {"PUT /sessions", raw_request("PUT", "/sessions", valid, json_headers), 405, "method_not_allowed", false,
       "GET,HEAD,POST,OPTIONS"},
      {"DELETE /sessions", raw_request("DELETE", "/sessions"), 405, "method_not_allowed", false, "GET,HEAD,POST,OPTIONS"},
      {"PATCH /sessions", raw_request("PATCH", "/sessions", valid, json_headers), 405, "method_not_allowed", false,
       "GET,HEAD,POST,OPTIONS"},
      {"POST /sessions/{id}", raw_request("POST", "/sessions/{id}", valid, json_headers), 405, "method_not_allowed", false,
       "DELETE,GET,HEAD,PATCH,OPTIONS"},
      {"PUT /sessions/{id}", raw_request("PUT", "/sessions/{id}", valid, json_headers), 405, "method_not_allowed", false,
       "DELETE,GET,HEAD,PATCH,OPTIONS"},
      {"POST /healthz", raw_request("POST", "/healthz", "{}", json_headers), 405, "method_not_allowed", false,
       "GET,HEAD,OPTIONS"},
      // --- framing: answered once, then the connection is closed --------------------------
      {"Transfer-Encoding: chunked, identity",
       raw_request("POST", "/sessions", chunked_body({valid}),
                   {{"Content-Type", "application/json"}, {"Transfer-Encoding", "chunked, identity"}}),
       400, "bad_request", true},
      {"Transfer-Encoding: gzip",
       raw_request("POST", "/sessions", valid, {{"Content-Type", "application/json"}, {"Transfer-Encoding", "gzip"}}), 400,
       "bad_request", true},
      {"Transfer-Encoding: gzip, chunked",
       raw_request("POST", "/sessions", chunked_body({valid}),
                   {{"Content-Type", "application/json"}, {"Transfer-Encoding", "gzip, chunked"}}),
       400, "bad_request", true},
      {"Transfer-Encoding twice",
       raw_request("POST", "/sessions", chunked_body({valid}),
                   {{"Content-Type", "application/json"}, {"Transfer-Encoding", "chunked"}, {"Transfer-Encoding", "chunked"}}),
       400, "bad_request", true},
      {"Transfer-Encoding then Content-Length",
       raw_request("POST", "/sessions", chunked_body({valid}),
                   {{"Content-Type", "application/json"},
                    {"Transfer-Encoding", "chunked"},
                    {"Content-Length", std::to_string(chunked_body({valid}).size())}}),
       400, "bad_request", true},
      {"Content-Length then Transfer-Encoding",
       raw_request("POST", "/sessions", chunked_body({valid}),
                   {{"Content-Type", "application/json"},
                    {"Content-Length", std::to_string(chunked_body({valid}).size())},
                    {"Transfer-Encoding", "chunked"}}),
       400, "bad_request", true},
      {"two different Content-Lengths",
       raw_request(
           "POST",
           "/sessions", valid,
           {{"Content-Type", "application/json"}, {"Content-Length", std::to_string(valid.size())}, {"Content-Length", "3"}}),
       400, "bad_request", true},
      {"two equal Content-Lengths",
       raw_request("POST", "/sessions", valid,
                   {{"Content-Type", "application/json"},
                    {"Content-Length", std::to_string(valid.size())},
                    {"Content-Length", std::to_string(valid.size())}}),
       400, "bad_request", true},
      {"Content-Length: abc",
       raw_request("POST", "/sessions", valid, {{"Content-Type", "application/json"}, {"Content-Length", "abc"}}), 400,
       "bad_request", true},
      {"Content-Length: -1",
       raw_request("POST", "/sessions", valid, {{"Content-Type", "application/json"}, {"Content-Length", "-1"}}), 400,
       "bad_request", true},
      {"two Host headers", raw_request("GET", "/healthz", "", {{"Host", "evil.example"}}), 400, "bad_request", true},
      {"malformed request line", "GARBAGE\r\n\r\n", 400, "bad_request", true},
      {"header line without a colon", "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nNoColonHere\r\n\r\n", 400, "bad_request",
       true},
      {"bad chunk size",
       raw_request("POST", "/sessions", "zz\r\nabc\r\n0\r\n\r\n",
                   {{"Content-Type", "application/json"}, {"Transfer-Encoding", "chunked"}}),
       400, "bad_request", true},
  };
  return t;
}

std::set<std::string> allow_tokens(const std::string& header) {
  std::set<std::string> out;
  std::string token;
  for (char c : header + ",") {
    if (c == ',') {
      if (!token.empty()) out.insert(token);
      token.clear();
    } else if (c != ' ') {
      token += c;
    }
  }
  return out;
}

}  // namespace

TEST_CASE("bad input: exact status, error body, no state change, server survives") {
  gateway_process gw({{"GATEWAY_MAX_BODY_BYTES", std::to_string(max_body)}});
  auto probe = create_session(gw.port(), R"({"title":"probe","config":{"provider":"mock","temperature":1},)"
                                         R"("scopes":{"org":"acme"},"metadata":{"team":"red"}})");
  create_session(gw.port(), R"({"title":"other"})");
  const std::string probe_id = str(probe.at("id"));
  const auto list_before = get_json(gw.port(), "/sessions?limit=500");
  REQUIRE(list_before.at("total") == 2);
  const auto probe_before = get_json(gw.port(), "/sessions/" + probe_id);

  const auto cases = bad_cases();
  CHECK(cases.size() >= 50);
  for (const auto& c : cases) {
    INFO("case: " << c.name);
    std::string request = c.request;
    boost::algorithm::replace_all(request, "{id}", probe_id);
    http_reply reply;
    {
      http_client client(gw.port(), std::chrono::seconds(5));
      try {
        client.send_raw(request);
      } catch (const std::exception&) {
        // The server may answer and close before it has read everything we send.
      }
      try {
        reply = client.read_reply();
      } catch (const std::exception& e) {
        FAIL_CHECK("no answer: " << e.what());
        continue;
      }
      INFO("answer: " << reply.status << " " << reply.body.substr(0, 300));
      check_error(reply, c.status, c.code);
      CHECK(reply.header("Content-Type").find("html") == std::string::npos);
      if (c.status == 405) {
        CHECK(allow_tokens(reply.header("Allow")) == allow_tokens(c.allow));
      }
      if (c.closes) {
        CHECK(client.closed_by_peer(std::chrono::seconds(3)));
      } else {
        // The answer left the connection in a clean state: it serves the next request.
        auto next = client.request("GET", "/healthz", "", {});
        CHECK(next.status == 200);
      }
    }
    // Nothing stored changed.
    CHECK(get_json(gw.port(), "/sessions?limit=500") == list_before);
    CHECK(get_json(gw.port(), "/sessions/" + probe_id) == probe_before);
  }
  // The server is still up and well.
  CHECK(http_call(gw.port(), "GET", "/healthz").status == 200);
  CHECK(http_call(gw.port(), "GET", "/readyz").status == 200);
  CHECK(gw.stderr_text().find("internal error") == std::string::npos);
}

TEST_CASE("bodies at the limits are accepted") {
  gateway_process gw({{"GATEWAY_MAX_BODY_BYTES", std::to_string(max_body)}});
  SUBCASE("a valid chunked body creates a session") {
    const std::string body = R"({"title":"chunky","metadata":{"k":"v"}})";
    http_client client(gw.port());
    client.send_raw(raw_request("POST", "/sessions", chunked_body({body.substr(0, 5), body.substr(5, 10), body.substr(15)}),
                                {{"Content-Type", "application/json"}, {"Transfer-Encoding", "chunked"}}));
    auto r = client.read_reply();
    REQUIRE(r.status == 201);
    CHECK(r.json().at("title") == "chunky");
    CHECK(r.json().at("metadata").at("k") == "v");
    // ... and the connection stays usable.
    auto again = client.request("GET", "/sessions/" + str(r.json().at("id")), "", {});
    CHECK(again.status == 200);
    CHECK(again.json() == r.json());
    CHECK(get_json(gw.port(), "/sessions").at("total") == 1);
  }
  SUBCASE("a chunked PATCH") {
    auto s = create_session(gw.port());
    http_client client(gw.port());
    client.send_raw(raw_request("PATCH", "/sessions/" + str(s.at("id")), chunked_body({R"({"title":)", R"("via chunks"})"}),
                                {{"Content-Type", "application/json"}, {"Transfer-Encoding", "chunked"}}));
    auto r = client.read_reply();
    REQUIRE(r.status == 200);
    CHECK(r.json().at("title") == "via chunks");
  }
  SUBCASE("a body of exactly GATEWAY_MAX_BODY_BYTES") {
    const std::string body = R"({"title":"exact")" + std::string(max_body - 17, ' ') + "}";
    REQUIRE(body.size() == max_body);
    auto r = http_call(gw.port(), "POST", "/sessions", body);
    CHECK(r.status == 201);
    CHECK(r.json().at("title") == "exact");
  }
  SUBCASE("Expect: 100-continue gets a 100, then the body is read") {
    const std::string body = R"({"title":"continued"})";
    http_client client(gw.port());
    client.send_raw(
        "POST /sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nExpect: 100-continue\r\n"
        "Content-Length: " +
        std::to_string(body.size()) + "\r\n\r\n");
    auto interim = client.read_head();
    CHECK(interim.status == 100);
    client.send_raw(body);
    auto r = client.read_reply();
    REQUIRE(r.status == 201);
    CHECK(r.json().at("title") == "continued");
  }
}

TEST_CASE("stored-data limits: the largest allowed values pass, one more byte is a 400") {
  gateway_process gw;  // default body limit (1 MiB), so the 64 KiB config limit is reachable
  auto map_of = [](int entries, std::size_t key_len, std::size_t value_len) {
    std::string out = "{";
    for (int i = 0; i < entries; ++i) {
      std::string key = std::to_string(i);
      key += std::string(key_len > key.size() ? key_len - key.size() : 0, 'k');
      out += (i ? "," : "") + std::string("\"") + key + "\":\"" + std::string(value_len, 'v') + "\"";
    }
    return out + "}";
  };
  auto config_of = [](std::size_t serialized) {  // {"pad":"xxx..."} of exactly `serialized` bytes
    return R"({"pad":")" + std::string(serialized - 10, 'x') + R"("})";
  };
  REQUIRE(config_of(65536).size() == 65536);
  struct limit_case {
    std::string body;
    int status;
  };
  const std::vector<limit_case> cases = {
      {R"({"title":")" + std::string(1000, 't') + R"("})", 201},
      {R"({"title":")" + std::string(1001, 't') + R"("})", 400},
      {R"({"agent_name":")" + std::string(200, 'a') + R"("})", 201},
      {R"({"agent_name":")" + std::string(201, 'a') + R"("})", 400},
      {R"({"metadata":)" + map_of(64, 128, 1024) + "}", 201},
      {R"({"metadata":)" + map_of(65, 1, 1) + "}", 400},
      {R"({"scopes":)" + map_of(1, 129, 1) + "}", 400},
      {R"({"scopes":)" + map_of(1, 1, 1025) + "}", 400},
      {R"({"config":)" + config_of(65536) + "}", 201},
      {R"({"config":)" + config_of(65537) + "}", 400},
      {R"({"title":"unknown fields are ignored","colour":"blue","nested":{"x":[1,2]}})", 201},
  };
  std::int64_t expected_total = 0;
  for (const auto& c : cases) {
    INFO("body of " << c.body.size() << " bytes: " << c.body.substr(0, 80));
    auto r = http_call(gw.port(), "POST", "/sessions", c.body);
    if (c.status == 201) {
      CHECK(r.status == 201);
      ++expected_total;
      if (r.status == 201) {
        auto sent = boost::json::parse(c.body).as_object();
        for (const char* field : {"title", "agent_name", "metadata", "scopes", "config"})
          if (sent.contains(field)) CHECK(r.json().at(field) == sent.at(field));
        CHECK_FALSE(r.json().as_object().contains("colour"));
      }
    } else {
      check_error(r, c.status, "bad_request");
    }
    CHECK(get_json(gw.port(), "/sessions").at("total") == expected_total);
  }
}

TEST_CASE("numbers that overflow a double are refused: never stored, never a 500") {
  // boost::json parses 1e400 to infinity and serializes it as the non-JSON token
  // "Infinity": stored, it makes that session's GET and every list page a 500.
  gateway_process gw;
  auto probe = create_session(gw.port(), R"({"title":"probe","config":{"provider":"mock"}})");
  const std::string id = str(probe.at("id"));
  const auto list_before = get_json(gw.port(), "/sessions");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"POST", R"({"config":{"x":1e400}})"},
      {"POST", R"({"config":{"nested":{"deeper":[1,-1e999]}}})"},
      {"POST", R"({"config":{"mock":{"tool_calls":[{"name":"calculator","args":{"n":1e309}}]}}})"},
      {"PATCH", R"({"config":{"x":-1e400}})"},
  };
  for (const auto& [method, body] : cases) {
    INFO(method << " " << body);
    auto r = http_call(gw.port(), method, method == "POST" ? "/sessions" : "/sessions/" + id, body);
    INFO("answer: " << r.status << " " << r.body);
    check_error(r, 400, "bad_request");
    auto list = http_call(gw.port(), "GET", "/sessions");
    CHECK(list.status == 200);
    CHECK(try_json(list.body) == std::optional<boost::json::value>(list_before));
    auto got = http_call(gw.port(), "GET", "/sessions/" + id);
    CHECK(got.status == 200);
    CHECK(try_json(got.body) == std::optional<boost::json::value>(probe));
  }
}

TEST_CASE("a non-UTF-8 charset is refused whatever the parameter order") {
  gateway_process gw;
  for (std::string type : {"application/json; v=1; charset=latin1", "application/json;profile=x;charset=\"iso-8859-1\""}) {
    INFO("Content-Type: " << type);
    auto r = http_call(gw.port(), "POST", "/sessions", R"({"title":"x"})", {{"Content-Type", type}});
    check_error(r, 415, "unsupported_media_type");
  }
  CHECK(get_json(gw.port(), "/sessions").at("total") == 0);
}
