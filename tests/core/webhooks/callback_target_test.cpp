#include "core/webhooks/callback_target.hpp"

#include <doctest/doctest.h>

#include <string>

namespace {

using agw::core::callback_target;
using agw::core::parse_callback_url;

callback_target ok(const std::string& url) {
  auto parsed = parse_callback_url(url);
  REQUIRE_MESSAGE(std::holds_alternative<callback_target>(parsed), url);
  return std::get<callback_target>(parsed);
}

std::string refused(const std::string& url) {
  auto parsed = parse_callback_url(url);
  if (auto* why = std::get_if<std::string>(&parsed)) return *why;
  return "";
}

}  // namespace

TEST_CASE("callback_target: http and https URLs are taken apart") {
  auto a = ok("http://hooks.example.com/run-done?x=1&y=%20");
  CHECK_FALSE(a.https);
  CHECK(a.host == "hooks.example.com");
  CHECK(a.port == 80);
  CHECK(a.target == "/run-done?x=1&y=%20");
  CHECK_FALSE(a.host_is_address);

  auto b = ok("HTTPS://Hooks.Example.com:8443");
  CHECK(b.https);
  CHECK(b.host == "hooks.example.com");
  CHECK(b.port == 8443);
  CHECK(b.target == "/");

  auto c = ok("http://[::1]:9000/h");
  CHECK(c.host == "::1");
  CHECK(c.host_is_address);
  CHECK(c.port == 9000);

  auto d = ok("https://127.0.0.1/");
  CHECK(d.host == "127.0.0.1");
  CHECK(d.host_is_address);
  CHECK(d.port == 443);
}

TEST_CASE("callback_target: bad shapes are refused with a reason") {
  for (const char* url : {"ftp://x", "not a url", "//host/path", "/relative", "http://", "https://", "http://user:pw@host/",
                          "http://user@host/", "http://host/#frag", "http://host:0/", "http://host:65536/", "http://host:x/",
                          "mailto:a@b.c", "http://ho st/", "file:///etc/passwd", "javascript:alert(1)"}) {
    CAPTURE(url);
    CHECK_FALSE(refused(url).empty());
  }
  CHECK(refused("http://example.com/" + std::string(5000, 'a')).find("longer than") != std::string::npos);
  CHECK(refused("http://user:pw@host/").find("credentials") != std::string::npos);
}
