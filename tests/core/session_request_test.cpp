#include "core/session_request.hpp"

#include <doctest/doctest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <functional>
#include <string>

#include "core/api_error.hpp"

namespace {

using agw::core::api_error;
using agw::core::apply_session_patch;
using agw::core::error_code;
using agw::core::parse_limit;
using agw::core::parse_offset;
using agw::core::parse_session_create;
using agw::core::parse_session_filter;
using agw::core::query_params;
using agw::core::session_record;

boost::json::value json(const std::string& text) { return boost::json::parse(text); }

// The message of the bad_request the call throws, or "" when it does not throw.
template <class F>
std::string bad_request_message(F f) {
  try {
    f();
  } catch (const api_error& e) {
    CHECK(e.code() == error_code::bad_request);
    return e.what();
  }
  return "";
}

bool same(const session_record& a, const session_record& b) {
  return a.id == b.id && a.thread_id == b.thread_id && a.title == b.title && a.status == b.status &&
         a.agent_name == b.agent_name && a.config == b.config && a.scopes == b.scopes && a.metadata == b.metadata &&
         a.created_at_ms == b.created_at_ms && a.updated_at_ms == b.updated_at_ms && a.message_count == b.message_count &&
         a.last_event_id == b.last_event_id;
}

std::string repeat(char c, std::size_t n) { return std::string(n, c); }

std::string map_with_entries(std::size_t n) {
  boost::json::object o;
  for (std::size_t i = 0; i < n; ++i) o["k" + std::to_string(i)] = "v";
  return boost::json::serialize(o);
}

}  // namespace

TEST_CASE("session_request: parse_session_create valid bodies") {
  SUBCASE("empty object keeps the defaults") {
    const auto s = parse_session_create(json("{}"));
    CHECK_FALSE(s.title);
    CHECK(s.status == "active");
    CHECK(s.agent_name == "default");
    CHECK(s.config.empty());
    CHECK(s.scopes.empty());
    CHECK(s.metadata.empty());
  }
  SUBCASE("every field") {
    const auto s = parse_session_create(json(R"({"title":"T","agent_name":"helper",
        "config":{"provider":"mock","model":"m","temperature":0.5,"max_tokens":100,"mock":{"tokens":3}},
        "scopes":{"tenant":"a"},"metadata":{"k":"v","x":""},"unknown_field":1})"));
    CHECK(s.title == "T");
    CHECK(s.agent_name == "helper");
    CHECK(s.config.at("provider") == "mock");
    CHECK(s.config.at("max_tokens") == 100);
    CHECK(s.scopes == agw::core::string_map{{"tenant", "a"}});
    CHECK(s.metadata == agw::core::string_map{{"k", "v"}, {"x", ""}});
  }
  SUBCASE("nulls mean unset") {
    const auto s = parse_session_create(json(R"({"title":null,"config":null,"scopes":null,"metadata":null})"));
    CHECK_FALSE(s.title);
    CHECK(s.config.empty());
    CHECK(s.scopes.empty());
    CHECK(s.metadata.empty());
  }
  SUBCASE("limits are inclusive") {
    const auto body = boost::json::object{{"title", repeat('t', 1000)},
                                          {"agent_name", repeat('a', 200)},
                                          {"metadata", json(map_with_entries(64))},
                                          {"scopes", boost::json::object{{repeat('k', 128), repeat('v', 1024)}}}};
    const auto s = parse_session_create(body);
    CHECK(s.title->size() == 1000);
    CHECK(s.metadata.size() == 64);
    CHECK(s.scopes.begin()->second.size() == 1024);
  }
  SUBCASE("temperature bounds and max_tokens as uint64") {
    CHECK_NOTHROW(parse_session_create(json(R"({"config":{"temperature":0}})")));
    CHECK_NOTHROW(parse_session_create(json(R"({"config":{"temperature":2}})")));
    CHECK_NOTHROW(parse_session_create(json(R"({"config":{"max_tokens":1}})")));
    CHECK_NOTHROW(parse_session_create(json(R"({"config":{"provider":"openai"}})")));
  }
}

TEST_CASE("session_request: parse_session_create invalid bodies name the field") {
  struct row {
    std::string body;
    std::string mentions;
  };
  const std::vector<row> rows = {
      {"[]", "request body"},
      {"\"x\"", "request body"},
      {"null", "request body"},
      {R"({"title":5})", "title"},
      {R"({"title":{}})", "title"},
      {R"({"title":")" + repeat('t', 1001) + "\"}", "title"},
      {R"({"agent_name":""})", "agent_name"},
      {R"({"agent_name":null})", "agent_name"},
      {R"({"agent_name":7})", "agent_name"},
      {R"({"agent_name":")" + repeat('a', 201) + "\"}", "agent_name"},
      {R"({"config":[]})", "config"},
      {R"({"config":"x"})", "config"},
      {R"({"config":{"provider":"other"}})", "config.provider"},
      {R"({"config":{"provider":1}})", "config.provider"},
      {R"({"config":{"model":1}})", "config.model"},
      {R"({"config":{"temperature":-0.1}})", "config.temperature"},
      {R"({"config":{"temperature":2.01}})", "config.temperature"},
      {R"({"config":{"temperature":"1"}})", "config.temperature"},
      {R"({"config":{"max_tokens":0}})", "config.max_tokens"},
      {R"({"config":{"max_tokens":-1}})", "config.max_tokens"},
      {R"({"config":{"max_tokens":1.5}})", "config.max_tokens"},
      {R"({"config":{"max_tokens":18446744073709551615}})", "config.max_tokens"},
      {R"({"config":{"mock":{"tokens":-1}}})", "config.mock.tokens"},
      {R"({"config":{"pad":")" + repeat('x', 64 * 1024) + "\"}}", "config"},
      {R"({"scopes":[]})", "scopes"},
      {R"({"scopes":{"a":1}})", "scopes.a"},
      {R"({"scopes":{"":"v"}})", "scopes"},
      {R"({"metadata":"x"})", "metadata"},
      {R"({"metadata":{"a":null}})", "metadata.a"},
      {R"({"metadata":{"a":{"b":"c"}}})", "metadata.a"},
      {R"({"metadata":{")" + repeat('k', 129) + R"(":"v"}})", "metadata"},
      {R"({"metadata":{"k":")" + repeat('v', 1025) + "\"}}", "metadata"},
      {R"({"metadata":)" + map_with_entries(65) + "}", "metadata"},
  };
  for (const auto& r : rows) {
    CAPTURE(r.body.substr(0, 120));
    const auto message = bad_request_message([&] { parse_session_create(json(r.body)); });
    CHECK(message.find(r.mentions) != std::string::npos);
  }
}

TEST_CASE("session_request: apply_session_patch valid bodies") {
  session_record base;
  base.id = "s";
  base.thread_id = "t";
  base.title = "old";
  base.config = {{"provider", "mock"}};
  base.metadata = {{"a", "1"}};
  base.scopes = {{"tenant", "x"}};
  base.created_at_ms = 5;

  struct row {
    std::string body;
    std::function<bool(const session_record&)> check;
  };
  const std::vector<row> rows = {
      {"{}", [&](const session_record& s) { return same(s, base); }},
      {R"({"title":"new"})", [](const session_record& s) { return s.title == "new" && s.metadata.at("a") == "1"; }},
      {R"({"title":null})", [](const session_record& s) { return !s.title; }},
      {R"({"config":{"model":"m"}})",
       [](const session_record& s) {
         return s.config == boost::json::object{{"model", "m"}};
       }},  // replaced, not merged
      {R"({"config":null})", [](const session_record& s) { return s.config.empty(); }},
      {R"({"metadata":{"b":"2"}})",
       [](const session_record& s) {
         return s.metadata == agw::core::string_map{{"b", "2"}};
       }},
      {R"({"metadata":null})", [](const session_record& s) { return s.metadata.empty(); }},
      {R"({"status":"inactive"})", [](const session_record& s) { return s.status == "inactive"; }},
      {R"({"status":"active"})", [](const session_record& s) { return s.status == "active"; }},
      // Fields a PATCH may not change are ignored.
      {R"({"scopes":{"tenant":"y"},"agent_name":"z","id":"other"})", [&](const session_record& s) { return same(s, base); }},
  };
  for (const auto& r : rows) {
    CAPTURE(r.body);
    auto s = base;
    apply_session_patch(json(r.body), s);
    CHECK(r.check(s));
    CHECK(s.id == "s");
    CHECK(s.scopes == base.scopes);
  }
}

TEST_CASE("session_request: an invalid patch leaves the record unchanged") {
  session_record base;
  base.id = "s";
  base.title = "old";
  base.config = {{"provider", "mock"}};
  base.metadata = {{"a", "1"}};
  const std::vector<std::pair<std::string, std::string>> rows = {
      {"[]", "request body"},
      {"5", "request body"},
      // A valid field first: still nothing is applied.
      {R"({"title":"new","status":"deleted"})", "status"},
      {R"({"title":"new","status":"error"})", "status"},  // only the server sets error
      {R"({"title":"new","status":null})", "status"},
      {R"({"metadata":{"b":"2"},"title":7})", "title"},
      {R"({"title":"new","config":{"temperature":9}})", "config.temperature"},
      {R"({"title":"new","config":[]})", "config"},
      {R"({"title":"new","metadata":{"x":1}})", "metadata.x"},
      {R"({"title":"new","metadata":[]})", "metadata"},
  };
  for (const auto& [body, mentions] : rows) {
    CAPTURE(body);
    auto s = base;
    const auto message = bad_request_message([&] { apply_session_patch(json(body), s); });
    CHECK(message.find(mentions) != std::string::npos);
    CHECK(same(s, base));
  }
}

TEST_CASE("session_request: parse_session_filter") {
  SUBCASE("defaults") {
    const auto f = parse_session_filter({});
    CHECK(f.limit == 50);
    CHECK(f.offset == 0);
    CHECK_FALSE(f.status);
    CHECK(f.metadata.empty());
    CHECK(f.scopes.empty());
  }
  SUBCASE("every parameter") {
    const auto f = parse_session_filter({{"limit", "10"},
                                         {"offset", "20"},
                                         {"status", "error"},
                                         {"metadata.team", "x y"},
                                         {"metadata.env", ""},
                                         {"scopes.tenant", "t1"},
                                         {"metadata.a.b", "dotted"}});
    CHECK(f.limit == 10);
    CHECK(f.offset == 20);
    CHECK(f.status == "error");
    using pairs = std::vector<std::pair<std::string, std::string>>;
    CHECK(f.metadata == pairs{{"team", "x y"}, {"env", ""}, {"a.b", "dotted"}});
    CHECK(f.scopes == pairs{{"tenant", "t1"}});
  }
  SUBCASE("limit is capped at 500") {
    CHECK(parse_session_filter({{"limit", "500"}}).limit == 500);
    CHECK(parse_session_filter({{"limit", "501"}}).limit == 500);
    CHECK(parse_session_filter({{"limit", "0"}}).limit == 0);
    CHECK(parse_session_filter({{"limit", "99999999999999999999999"}}).limit == 500);
  }
  SUBCASE("invalid parameters") {
    const std::vector<std::pair<query_params, std::string>> rows = {
        {{{"limit", "-1"}}, "limit"},
        {{{"limit", "abc"}}, "limit"},
        {{{"limit", ""}}, "limit"},
        {{{"limit", "1.5"}}, "limit"},
        {{{"limit", "10x"}}, "limit"},
        {{{"limit", "-99999999999999999999999"}}, "limit"},
        {{{"offset", "-1"}}, "offset"},
        {{{"offset", "x"}}, "offset"},
        {{{"offset", ""}}, "offset"},
        {{{"offset", "99999999999999999999999"}}, "offset"},
        {{{"status", "deleted"}}, "status"},
        {{{"status", ""}}, "status"},
        {{{"limit", "1"}, {"limit", "2"}}, "limit"},
        {{{"metadata.a", "1"}, {"metadata.a", "2"}}, "metadata.a"},
        {{{"sort", "asc"}}, "sort"},
        {{{"metadata.", "x"}}, "metadata."},
        {{{"scopes.", "x"}}, "scopes."},
        {{{"metadata", "x"}}, "metadata"},
        {{{"Limit", "5"}}, "Limit"},
    };
    for (const auto& [params, mentions] : rows) {
      CAPTURE(params.front().first);
      CAPTURE(params.front().second);
      const auto message = bad_request_message([&] { parse_session_filter(params); });
      CHECK(message.find(mentions) != std::string::npos);
    }
  }
}

TEST_CASE("session_request: parse_limit and parse_offset") {
  struct row {
    const char* text;
    std::int64_t max;
    std::int64_t expected;  // -1: bad_request
  };
  const row rows[] = {
      {"0", 100, 0},
      {"7", 100, 7},
      {"100", 100, 100},
      {"101", 100, 100},
      {"9223372036854775807", 100, 100},
      {"9223372036854775808", 100, 100},
      {"99999999999999999999999999999999999999", 100, 100},
      {"007", 100, 7},
      {"", 100, -1},
      {"-1", 100, -1},
      {"-99999999999999999999999999999", 100, -1},
      {"+5", 100, -1},
      {" 5", 100, -1},
      {"5 ", 100, -1},
      {"0x10", 100, -1},
      {"1e3", 100, -1},
      {"99999999999999999999x", 100, -1},
  };
  for (const auto& r : rows) {
    CAPTURE(r.text);
    if (r.expected < 0) {
      CHECK(bad_request_message([&] { parse_limit(r.text, r.max); }).find("limit") != std::string::npos);
    } else {
      CHECK(parse_limit(r.text, r.max) == r.expected);
    }
  }
  CHECK(parse_offset("0") == 0);
  CHECK(parse_offset("123456789012") == 123456789012);
  CHECK(parse_offset("9223372036854775807") == INT64_MAX);
  CHECK(bad_request_message([] { parse_offset("9223372036854775808"); }).find("offset") != std::string::npos);
  CHECK(bad_request_message([] { parse_offset("-0x1"); }).find("offset") != std::string::npos);
}

TEST_CASE("session_request: reject_duplicate_keys") {
  CHECK_NOTHROW(agw::core::reject_duplicate_keys({{"a", "1"}, {"b", "1"}}));
  CHECK_NOTHROW(agw::core::reject_duplicate_keys({}));
  CHECK(bad_request_message([] {
          agw::core::reject_duplicate_keys({{"a", "1"}, {"b", "1"}, {"a", "1"}});
        }).find("'a'") != std::string::npos);
}
