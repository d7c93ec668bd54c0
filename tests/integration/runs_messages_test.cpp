// POST /sessions/{id}/messages with bad input (each answer is the contract's
// error body and stores nothing), and GET /sessions/{id}/messages paging.
#include <doctest/doctest.h>

#include <algorithm>

#include "tests/support/gateway_process.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/sse_reader.hpp"

using namespace agw::test;
using namespace agw::test::runs;

namespace {

const std::string unknown_session = "00000000-0000-4000-8000-000000000000";

struct stored_state {
  boost::json::value message_count;
  boost::json::value last_event_id;
  boost::json::array messages;
  bool operator==(const stored_state&) const = default;
};

stored_state state_of(std::uint16_t port, const std::string& sid) {
  auto s = get_session(port, sid);
  return {s.at("message_count"), s.at("last_event_id"), get_messages(port, sid)};
}

// Sends raw bytes on a fresh connection and reads one reply.
http_reply raw_exchange(std::uint16_t port, const std::string& bytes) {
  http_client c(port);
  c.send_raw(bytes);
  return c.read_reply();
}

std::string post_raw(const std::string& target, const std::string& body, const std::string& headers) {
  return "POST " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + headers + "Content-Length: " + std::to_string(body.size()) +
         "\r\n\r\n" + body;
}

}  // namespace

TEST_CASE("runs: bad message requests are refused and store nothing") {
  gateway_process gw(gateway_process::env_map{{"GATEWAY_MAX_BODY_BYTES", "4096"}});
  const std::string sid = create_session(gw.port());
  run_message(gw.port(), sid, "a first message so the state is not empty");
  const auto before = state_of(gw.port(), sid);
  REQUIRE(before.message_count == 2);
  const std::string path = messages_path(sid);

  struct bad_body {
    const char* what;
    std::string body;
  };
  const std::vector<bad_body> bad_bodies{
      {"empty content", R"({"content":""})"},
      {"whitespace-only content", R"({"content":"  \n"})"},
      {"tab-only content", R"({"content":"\t"})"},
      {"content a number", R"({"content":5})"},
      {"content null", R"({"content":null})"},
      {"content an object", R"({"content":{"text":"hi"}})"},
      {"content a list", R"({"content":["hi"]})"},
      {"content missing", R"({})"},
      {"content missing, other fields", R"({"text":"hi"})"},
      {"body an array", R"(["hi"])"},
      {"body a string", R"("hi")"},
      {"body null", "null"},
      {"body empty", ""},
      {"malformed JSON", R"({"content": "hi")"},
      {"trailing bytes", R"({"content":"hi"} x)"},
      {"callback_url not a string", R"({"content":"hi","callback_url":5})"},
  };
  for (const auto& b : bad_bodies) {
    CAPTURE(b.what);
    check_error(http_call(gw.port(), "POST", path, b.body), 400, "bad_request");
  }

  SUBCASE("wrong or missing Content-Type is a 415") {
    check_error(http_call(gw.port(), "POST", path, message_body("hi"), {{"Content-Type", "text/plain"}}), 415,
                "unsupported_media_type");
    check_error(http_call(gw.port(), "POST", path, message_body("hi"), {{"Content-Type", "application/x-www-form-urlencoded"}}),
                415, "unsupported_media_type");
    check_error(http_call(gw.port(), "POST", path, message_body("hi"), {}), 415, "unsupported_media_type");
  }
  SUBCASE("a body above GATEWAY_MAX_BODY_BYTES is a 413") {
    const std::string huge = message_body(std::string(5000, 'a'));
    auto r = raw_exchange(gw.port(), post_raw(path, huge, "Content-Type: application/json\r\n"));
    check_error(r, 413, "payload_too_large");
    // Just below the limit is an ordinary message (checked last: it changes the state).
    const std::string fits(4000, 'b');
    REQUIRE(message_body(fits).size() < 4096);
    CHECK(state_of(gw.port(), sid) == before);
    auto ok = run_message(gw.port(), sid, fits);
    CHECK(ok->parser.frames.back().obj().at("assistant_data").at("content") == jstr(fits));
    CHECK(get_session(gw.port(), sid).at("message_count") == 4);
    return;
  }
  SUBCASE("unknown sessions are 404") {
    check_error(http_call(gw.port(), "POST", messages_path(unknown_session), message_body("hi")), 404, "not_found");
    check_error(http_call(gw.port(), "POST", messages_path("not-a-uuid"), message_body("hi")), 404, "not_found");
    check_error(http_call(gw.port(), "POST", messages_path(std::string(sid.size(), 'z')), message_body("hi")), 404, "not_found");
    check_error(http_call(gw.port(), "POST", "/sessions/" + unknown_session + "/abort", "", {}), 404, "not_found");
    check_error(http_call(gw.port(), "GET", messages_path(unknown_session)), 404, "not_found");
  }
  SUBCASE("wrong methods are 405") {
    check_error(http_call(gw.port(), "PUT", path, message_body("hi")), 405, "method_not_allowed");
    check_error(http_call(gw.port(), "DELETE", path), 405, "method_not_allowed");
    check_error(http_call(gw.port(), "GET", "/sessions/" + sid + "/abort"), 405, "method_not_allowed");
  }
  SUBCASE("a bad Idempotency-Key is a 400") {
    check_error(http_call(gw.port(), "POST", path, message_body("hi"),
                          {{"Content-Type", "application/json"}, {"Idempotency-Key", std::string(300, 'k')}}),
                400, "bad_request");
  }

  CHECK(state_of(gw.port(), sid) == before);
  // The session still works normally afterwards.
  auto ok = run_message(gw.port(), sid, "still fine");
  CHECK(ok->parser.tokens() == "still fine");
}

TEST_CASE("runs: GET messages pages newest first") {
  gateway_process gw;
  const std::string sid = create_session(gw.port());
  std::vector<std::string> newest_first;  // built oldest first, then reversed
  for (const char* content : {"one", "two", "three"}) {
    auto r = run_message(gw.port(), sid, content);
    const auto& answer = r->parser.frames.back().obj().at("assistant_data").as_object();
    newest_first.push_back(str(answer.at("parent_id")));  // the user message
    newest_first.push_back(str(answer.at("id")));
  }
  std::reverse(newest_first.begin(), newest_first.end());
  auto ids_of = [](const boost::json::value& page) {
    std::vector<std::string> out;
    for (const auto& m : page.at("messages").as_array()) out.push_back(str(m.at("id")));
    return out;
  };

  auto all = get_json(gw.port(), messages_path(sid));
  INFO("all: " << boost::json::serialize(all));
  CHECK(all.at("total") == 6);
  CHECK(all.at("limit") == 50);
  CHECK(all.at("offset") == 0);
  CHECK(all.at("has_more") == false);
  CHECK(ids_of(all) == newest_first);
  std::string previous = "9999";
  for (const auto& m : all.at("messages").as_array()) {
    CHECK(str(m.at("created_at")) <= previous);
    previous = str(m.at("created_at"));
    CHECK(m.at("session_id") == jstr(sid));
  }
  CHECK(all.at("messages").as_array()[0].at("content") == "three");
  CHECK(all.at("messages").as_array()[0].at("role") == "assistant");
  CHECK(all.at("messages").as_array()[5].at("content") == "one");
  CHECK(all.at("messages").as_array()[5].at("role") == "user");

  struct page_case {
    std::string query;
    std::size_t from, count;
    std::int64_t limit, offset;
    bool has_more;
  };
  const std::vector<page_case> pages{
      {"?limit=2", 0, 2, 2, 0, true},    {"?limit=2&offset=2", 2, 2, 2, 2, true},  {"?limit=2&offset=4", 4, 2, 2, 4, false},
      {"?offset=5", 5, 1, 50, 5, false}, {"?limit=4&offset=3", 3, 3, 4, 3, false}, {"?limit=5&offset=0", 0, 5, 5, 0, true},
      {"?offset=6", 6, 0, 50, 6, false}, {"?offset=100", 6, 0, 50, 100, false},    {"?limit=1000", 0, 6, 500, 0, false},
  };
  for (const auto& pc : pages) {
    CAPTURE(pc.query);
    auto page = get_json(gw.port(), messages_path(sid) + pc.query);
    INFO("page: " << boost::json::serialize(page));
    CHECK(page.at("total") == 6);
    CHECK(page.at("limit") == pc.limit);
    CHECK(page.at("offset") == pc.offset);
    CHECK(page.at("has_more") == pc.has_more);
    const std::vector<std::string> want(newest_first.begin() + static_cast<std::ptrdiff_t>(pc.from),
                                        newest_first.begin() + static_cast<std::ptrdiff_t>(pc.from + pc.count));
    CHECK(ids_of(page) == want);
  }

  for (const char* bad : {"?limit=-1", "?limit=abc", "?limit=1.5", "?limit=", "?offset=-1", "?offset=x", "?limit=2x"}) {
    CAPTURE(bad);
    check_error(http_call(gw.port(), "GET", messages_path(sid) + bad), 400, "bad_request");
  }
  check_error(http_call(gw.port(), "GET", messages_path(unknown_session)), 404, "not_found");

  // A new session has an empty first page.
  const std::string empty = create_session(gw.port());
  auto none = get_json(gw.port(), messages_path(empty));
  CHECK(none.at("messages").as_array().empty());
  CHECK(none.at("total") == 0);
  CHECK(none.at("has_more") == false);
}
