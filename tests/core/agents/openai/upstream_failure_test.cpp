#include "core/agents/openai/upstream_failure.hpp"

#include <doctest/doctest.h>

#include "core/http/streaming_http_client.hpp"

using namespace agw::core;
using namespace agw::core::openai;

TEST_CASE("upstream_failure: HTTP statuses map to the contract's codes with the upstream's own message") {
  struct row {
    int status;
    std::string code;
    bool retryable;
  };
  const std::vector<row> table{{401, "upstream_auth", false},        {403, "upstream_auth", false},
                               {404, "upstream_error", false},       {400, "upstream_error", false},
                               {429, "upstream_rate_limited", true}, {500, "upstream_error", true},
                               {502, "upstream_error", true},        {503, "upstream_error", true}};
  for (const auto& t : table) {
    CAPTURE(t.status);
    auto f = status_failure(t.status, R"({"error":{"message":"nope","type":"x"}})", nullptr);
    CHECK(f.code == t.code);
    CHECK(f.retryable == t.retryable);
    CHECK(f.message == "upstream answered " + std::to_string(t.status) + ": nope");
  }
  const std::string after = "2";
  CHECK(status_failure(429, "", &after).retry_after == std::chrono::milliseconds(2000));
}

TEST_CASE("upstream_failure: the upstream's message in each shape servers send") {
  CHECK(upstream_message(R"({"error":{"message":"bad key"}})") == "bad key");
  CHECK(upstream_message(R"({"error":"model not found"})") == "model not found");
  CHECK(upstream_message(R"({"message":"overloaded"})") == "overloaded");
  CHECK(upstream_message("<html>Bad Gateway</html>") == "<html>Bad Gateway</html>");
  CHECK(upstream_message(std::string(2000, 'x')).size() == 500);
}

TEST_CASE("upstream_failure: Retry-After in seconds; a date or garbage is not honoured") {
  CHECK(parse_retry_after("3") == std::chrono::milliseconds(3000));
  CHECK(parse_retry_after(" 0.5") == std::chrono::milliseconds(500));
  CHECK_FALSE(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"));
  CHECK_FALSE(parse_retry_after("-1"));
}

TEST_CASE("upstream_failure: transport failures map to unavailable, timeout, protocol, incomplete") {
  auto code_of = [](streaming_http_errc e, bool body) { return transport_failure(e, "d", body).code; };
  CHECK(code_of(streaming_http_errc::connect_failed, false) == "upstream_unavailable");
  CHECK(code_of(streaming_http_errc::resolve_failed, false) == "upstream_unavailable");
  CHECK(code_of(streaming_http_errc::tls_failed, false) == "upstream_unavailable");
  CHECK(code_of(streaming_http_errc::idle_timeout, true) == "upstream_timeout");
  CHECK(code_of(streaming_http_errc::protocol_error, true) == "upstream_protocol");
  CHECK(code_of(streaming_http_errc::connection_lost, true) == "upstream_incomplete");
  CHECK(transport_failure(streaming_http_errc::connect_failed, "d", false).retryable);
  CHECK_FALSE(transport_failure(streaming_http_errc::tls_failed, "d", false).retryable);
  CHECK(transport_failure(streaming_http_errc::tls_failed, "d", false).message.find("TLS") != std::string::npos);
}
