#pragma once
// Small header-only helpers shared by the sessions_* integration tests:
// raw request building, the contract's error-body check, field format checks,
// and a bounded variant of run_gateway_command (a test must never hang).
#include <doctest/doctest.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tests/support/gateway_process.hpp"
#include "tests/support/http_client.hpp"

#ifndef GATEWAY_BINARY
#error "GATEWAY_BINARY must name the agent-gateway executable"
#endif

namespace agw::test::fixtures {

using namespace std::chrono_literals;

inline const header_list json_headers{{"Content-Type", "application/json"}};

// Lower-case canonical UUID text: 8-4-4-4-12 hex digits.
inline bool is_uuid(std::string_view s) {
  if (s.size() != 36) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (c != '-') return false;
    } else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
      return false;
    }
  }
  return true;
}

// Strictly "YYYY-MM-DDTHH:MM:SS.mmmZ"; returns epoch milliseconds.
inline std::optional<std::int64_t> parse_rfc3339_ms(std::string_view s) {
  if (s.size() != 24) return std::nullopt;
  const std::string_view shape = "dddd-dd-ddTdd:dd:dd.dddZ";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 'd') {
      if (s[i] < '0' || s[i] > '9') return std::nullopt;
    } else if (s[i] != shape[i]) {
      return std::nullopt;
    }
  }
  auto num = [&](std::size_t pos, std::size_t len) {
    int v = 0;
    for (std::size_t i = pos; i < pos + len; ++i) v = v * 10 + (s[i] - '0');
    return v;
  };
  using namespace std::chrono;
  const year_month_day ymd{year{num(0, 4)}, month{static_cast<unsigned>(num(5, 2))}, day{static_cast<unsigned>(num(8, 2))}};
  if (!ymd.ok()) return std::nullopt;
  const int hh = num(11, 2), mm = num(14, 2), ss = num(17, 2), ms = num(20, 3);
  if (hh > 23 || mm > 59 || ss > 60) return std::nullopt;
  const auto tp = sys_days{ymd} + hours{hh} + minutes{mm} + seconds{ss} + milliseconds{ms};
  return duration_cast<milliseconds>(tp.time_since_epoch()).count();
}

inline std::int64_t now_epoch_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

inline std::string str(const boost::json::value& v) { return std::string(v.as_string()); }

// One HTTP/1.1 request as raw bytes. Content-Length is added when `body` is
// non-empty or `force_length` is set, unless a header already frames the body.
inline std::string raw_request(std::string_view method, std::string_view target, std::string_view body = {},
                               const header_list& headers = {}, bool force_length = false) {
  std::string req = std::string(method) + " " + std::string(target) + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  bool framed = false;
  for (const auto& [k, v] : headers) {
    req += k + ": " + v + "\r\n";
    std::string lower;
    for (char c : k) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower == "content-length" || lower == "transfer-encoding") framed = true;
  }
  if (!framed && (!body.empty() || force_length)) req += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  req += "\r\n";
  req += body;
  return req;
}

// A chunked body (with its terminating zero-size chunk) made of `chunks`.
inline std::string chunked_body(const std::vector<std::string>& chunks) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (const auto& c : chunks) {
    std::string size;
    for (std::size_t n = c.size(); n > 0; n /= 16) size.insert(size.begin(), hex[n % 16]);
    out += size + "\r\n" + c + "\r\n";
  }
  out += "0\r\n\r\n";
  return out;
}

inline std::optional<boost::json::value> try_json(const std::string& text) {
  boost::system::error_code ec;
  auto v = boost::json::parse(text, ec);
  if (ec) return std::nullopt;
  return v;
}

// The contract's error answer: exact status, a JSON content type and exactly
// {"error":{"code":"<code>","message":"<non-empty>"}} (extra fields allowed inside "error").
inline void check_error(int status_got, const std::string& content_type, const std::string& body, int status,
                        std::string_view code) {
  INFO("error answer: " << status_got << " " << body.substr(0, 300));
  CHECK(status_got == status);
  CHECK(content_type.starts_with("application/json"));
  auto parsed = try_json(body);
  if (!parsed) {
    FAIL_CHECK("error body is not JSON: " << body.substr(0, 200));
    return;
  }
  REQUIRE(parsed->is_object());
  const auto& top = parsed->get_object();
  CHECK(top.size() == 1);
  const auto* error = top.if_contains("error");
  REQUIRE(error != nullptr);
  REQUIRE(error->is_object());
  const auto* c = error->get_object().if_contains("code");
  const auto* m = error->get_object().if_contains("message");
  REQUIRE(c != nullptr);
  REQUIRE(m != nullptr);
  REQUIRE(c->is_string());
  CHECK(c->get_string() == code);
  REQUIRE(m->is_string());
  CHECK(!m->get_string().empty());
}

inline void check_error(const http_reply& r, int status, std::string_view code) {
  check_error(r.status, r.header("Content-Type"), r.body, status, code);
}

// POST /sessions with `body`; requires a 201 and returns the Session.
inline boost::json::object create_session(std::uint16_t port, std::string_view body = "{}") {
  auto r = http_call(port, "POST", "/sessions", body);
  INFO("create body: " << body << " answer: " << r.body);
  REQUIRE(r.status == 201);
  auto v = try_json(r.body);
  REQUIRE(v.has_value());
  REQUIRE(v->is_object());
  return v->get_object();
}

inline boost::json::value get_json(std::uint16_t port, const std::string& target, int expected_status = 200) {
  auto r = http_call(port, "GET", target);
  INFO("GET " << target << " -> " << r.status << " " << r.body.substr(0, 300));
  REQUIRE(r.status == expected_status);
  auto v = try_json(r.body);
  REQUIRE(v.has_value());
  return *v;
}

}  // namespace agw::test::fixtures
