// Stream tokens, API key sets and base64url (gateway/auth): the pure parts of auth.
#include <doctest/doctest.h>

#include "gateway/auth/api_key_set.hpp"
#include "gateway/auth/base64url.hpp"
#include "gateway/auth/stream_token.hpp"

using namespace agw::gateway::auth;

TEST_CASE("stream token: valid for its session until its expiry, refused otherwise") {
  const stream_token_signer signer("0123456789abcdef0123456789abcdef");
  const auto token = signer.issue("session-a", 1000);
  CHECK(signer.check(token, "session-a", 999) == token_verdict::valid);
  CHECK(signer.check(token, "session-a", 1000) == token_verdict::expired);
  CHECK(signer.check(token, "session-b", 999) == token_verdict::other_session);
  // Another secret, a flipped byte of the MAC or of the payload: a bad signature.
  CHECK(stream_token_signer("another-secret-0123456789abcdef!!").check(token, "session-a", 0) == token_verdict::bad_signature);
  auto tampered = token;
  tampered.back() = tampered.back() == 'A' ? 'B' : 'A';
  CHECK(signer.check(tampered, "session-a", 0) != token_verdict::valid);
  const auto other = signer.issue("session-a", 99999);
  const auto forged = other.substr(0, other.find('.')) + token.substr(token.find('.'));  // a later expiry, the old MAC
  CHECK(signer.check(forged, "session-a", 0) == token_verdict::bad_signature);
  for (const char* junk : {"", ".", "abc", "abc.def", "a.b.c", "!!!.???"})
    CHECK(signer.check(junk, "session-a", 0) != token_verdict::valid);
}

TEST_CASE("stream token: an empty secret is random per signer") {
  const stream_token_signer one("");
  const stream_token_signer two("");
  const auto token = one.issue("s", 5000);
  CHECK(one.check(token, "s", 0) == token_verdict::valid);
  CHECK(two.check(token, "s", 0) == token_verdict::bad_signature);
}

TEST_CASE("base64url: round trip without padding, and only canonical text decodes") {
  for (std::string bytes :
       {std::string(""), std::string("f"), std::string("fo"), std::string("foo"), std::string("\xff\xfe\x00\x01", 4)}) {
    const auto text = base64url_encode(bytes);
    CHECK(text.find('=') == std::string::npos);
    CHECK(text.find('+') == std::string::npos);
    CHECK(text.find('/') == std::string::npos);
    CHECK(base64url_decode(text) == bytes);
  }
  CHECK(base64url_encode("\xfb\xff") == "-_8");
  CHECK_FALSE(base64url_decode("Zm9v=").has_value());
  CHECK_FALSE(base64url_decode("Zm9+").has_value());
  CHECK_FALSE(base64url_decode("Z").has_value());
  CHECK_FALSE(base64url_decode("Zh").has_value());  // trailing bits set: not canonical for "f" (Zg)
}

TEST_CASE("api key set: finds a key and its tenant, nothing for near misses") {
  const api_key_set keys({{"key-one-0123456789", std::nullopt}, {"key-two-0123456789", std::string("acme")}});
  REQUIRE(keys.find("key-one-0123456789").has_value());
  CHECK_FALSE(keys.find("key-one-0123456789")->tenant.has_value());
  CHECK(keys.find("key-two-0123456789")->tenant == "acme");
  for (const char* miss : {"", "key-one-012345678", "key-one-01234567890", "KEY-ONE-0123456789"})
    CHECK_FALSE(keys.find(miss).has_value());
  CHECK_FALSE(api_key_set().find("anything").has_value());
}
