// JSON request bodies (gateway/request_body): the media type, then Boost.JSON's
// verdict, each refusal with the api_error code and message the handlers answer
// with. What the body is (an object, which fields) is the services' to check, and
// its size the connection's (the parser's body limit), so neither is refused here.
#include "gateway/request_body.hpp"

#include <doctest/doctest.h>

#include <boost/json/serialize.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/api_error.hpp"

namespace {

namespace http = boost::beast::http;
using agw::gateway::request;

request make_request(std::optional<std::string> content_type, std::string body) {
  request req{http::verb::post, "/sessions", 11};
  if (content_type) req.set(http::field::content_type, *content_type);
  req.body() = std::move(body);
  req.prepare_payload();
  return req;
}

// "ok <the value, serialized>" or "<code> <message>".
template <class Parse>
std::string outcome(Parse parse, const request& req) {
  try {
    return "ok " + boost::json::serialize(parse(req));
  } catch (const agw::core::api_error& e) {
    return std::string(agw::core::code_name(e.code())) + " " + e.what();
  }
}

struct row {
  std::optional<std::string> content_type;
  std::string body;
  std::string expected;
};

const std::string json = "application/json";

TEST_CASE("parse_json_body: the media type is application/json, UTF-8 if a charset is named") {
  const std::vector<row> rows = {
      {std::nullopt, "{}", "unsupported_media_type Content-Type must be application/json"},
      {"", "{}", "unsupported_media_type Content-Type must be application/json"},
      {"text/plain", "{}", "unsupported_media_type Content-Type must be application/json"},
      {"application/jsonx", "{}", "unsupported_media_type Content-Type must be application/json"},
      {"application/merge-patch+json", "{}", "unsupported_media_type Content-Type must be application/json"},
      {"application/json", "{}", "ok {}"},
      {"Application/JSON", "{}", "ok {}"},
      {" application/json ; charset=utf-8", "{}", "ok {}"},
      {"application/json;charset=\"UTF-8\"", "{}", "ok {}"},
      {"application/json; version=2; charset=utf-8", "{}", "ok {}"},  // every parameter is looked at
      {"application/json; version=2", "{}", "ok {}"},
      {"application/json; charset=latin-1", "{}", "unsupported_media_type JSON bodies must be UTF-8"},
      {"application/json; a=1; charset=utf-16", "{}", "unsupported_media_type JSON bodies must be UTF-8"},
      {"application/json; charset=", "{}", "unsupported_media_type JSON bodies must be UTF-8"},
  };
  for (const auto& r : rows) {
    CAPTURE(r.content_type.value_or("(none)"));
    CHECK(outcome(agw::gateway::parse_json_body, make_request(r.content_type, r.body)) == r.expected);
  }
}

TEST_CASE("parse_json_body: one complete JSON value, finite numbers, depth up to 64") {
  const std::vector<row> rows = {
      {json, R"({"a":1,"b":[true,null,"x"]})", R"(ok {"a":1,"b":[true,null,"x"]})"},
      {json, " \t\r\n{} \n", "ok {}"},  // whitespace around the value is fine
      {json, "", "bad_request malformed JSON body: incomplete JSON"},
      {json, "   ", "bad_request malformed JSON body: incomplete JSON"},
      {json, R"({"a":)", "bad_request malformed JSON body: incomplete JSON"},
      {json, R"({"a":1,})", "bad_request malformed JSON body: syntax error"},
      {json, "{'a':1}", "bad_request malformed JSON body: syntax error"},
      {json, "{} x", "bad_request malformed JSON body: extra data"},
      {json, "{}{}", "bad_request malformed JSON body: extra data"},
      // Not an object: accepted here; the handlers' services say what they expect.
      {json, "[1,2]", "ok [1,2]"},
      {json, "\"text\"", "ok \"text\""},
      {json, "null", "ok null"},
      // A duplicate key: the object keeps one, the last.
      {json, R"({"a":1,"a":2})", R"(ok {"a":2})"},
      {json, "1e999", "bad_request number out of range"},
      {json, R"({"deep":[{"x":-1e999}]})", "bad_request number out of range"},
      {json, "1e308", "ok 1E308"},
      {json, "\"\xff\"", "bad_request malformed JSON body: syntax error"},  // invalid UTF-8
      {json, "\"\xc3\xa9\"", "ok \"\xc3\xa9\""},
      {json, std::string(64, '[') + std::string(64, ']'), "ok " + std::string(64, '[') + std::string(64, ']')},
      {json, std::string(65, '[') + std::string(65, ']'), "bad_request malformed JSON body: too deep"},
  };
  for (const auto& r : rows) {
    CAPTURE(r.body);
    CHECK(outcome(agw::gateway::parse_json_body, make_request(r.content_type, r.body)) == r.expected);
  }
}

TEST_CASE("parse_optional_json_body: an empty body without a Content-Type is an empty object, nothing else is") {
  const std::vector<row> rows = {
      {std::nullopt, "", "ok {}"},
      {json, "", "bad_request malformed JSON body: incomplete JSON"},  // a declared JSON body must be one
      {std::nullopt, "{}", "unsupported_media_type Content-Type must be application/json"},
      {std::nullopt, " ", "unsupported_media_type Content-Type must be application/json"},
      {"text/plain", "", "unsupported_media_type Content-Type must be application/json"},
      {json, R"({"a":1})", R"(ok {"a":1})"},
  };
  for (const auto& r : rows) {
    CAPTURE(r.content_type.value_or("(none)"));
    CAPTURE(r.body);
    CHECK(outcome(agw::gateway::parse_optional_json_body, make_request(r.content_type, r.body)) == r.expected);
  }
}

TEST_CASE("parse_json_body: a large body is parsed whole (its limit is the connection's)") {
  std::string body = R"({"content":")" + std::string(1 << 20, 'x') + R"("})";
  auto value = agw::gateway::parse_json_body(make_request(json, body));
  CHECK(value.as_object().at("content").as_string().size() == std::size_t{1} << 20);
}

}  // namespace
