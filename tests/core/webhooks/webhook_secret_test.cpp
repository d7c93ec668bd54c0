#include "core/webhooks/webhook_secret.hpp"

#include <doctest/doctest.h>

#include <string>

namespace {

using agw::core::decode_webhook_secret;

std::string bytes(std::initializer_list<int> values) {
  std::string out;
  for (int v : values) out += static_cast<char>(v);
  return out;
}

}  // namespace

TEST_CASE("webhook_secret: decodes valid whsec_ secrets") {
  struct row {
    std::string secret;
    std::string key;
  };
  std::string count32;
  for (int i = 0; i < 32; ++i) count32 += static_cast<char>(i);
  const row rows[] = {
      {"whsec_MDEyMzQ1Njc4OWFiY2RlZg==", "0123456789abcdef"},    // 16 bytes, == padding
      {"whsec_MDEyMzQ1Njc4OWFiY2RlZmc=", "0123456789abcdefg"},   // 17 bytes, = padding
      {"whsec_MDEyMzQ1Njc4OWFiY2RlZmdo", "0123456789abcdefgh"},  // 18 bytes, no padding
      {"whsec_AAAAAAAAAAAAAAAAAAAAAA==", std::string(16, '\0')},
      {"whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=", count32},
      {"whsec_//////////////////////////8=", std::string(20, '\xff')},
      {"whsec_+/+/+/+/+/+/+/+/+/+/+/+/",
       bytes({0xfb, 0xff, 0xbf, 0xfb, 0xff, 0xbf, 0xfb, 0xff, 0xbf, 0xfb, 0xff, 0xbf, 0xfb, 0xff, 0xbf, 0xfb, 0xff, 0xbf})},
  };
  for (const auto& r : rows) {
    CAPTURE(r.secret);
    const auto key = decode_webhook_secret(r.secret);
    REQUIRE(key);
    CHECK(*key == r.key);
  }
}

TEST_CASE("webhook_secret: rejects unusable secrets") {
  const std::string rows[] = {
      "",
      "whsec_",
      "whsec",
      "MDEyMzQ1Njc4OWFiY2RlZg==",             // no prefix
      "WHSEC_MDEyMzQ1Njc4OWFiY2RlZg==",       // prefix is case-sensitive
      "whsec_MDEyMzQ1Njc4OWFiY2RlZg=",        // length not a multiple of 4
      "whsec_MDEyMzQ1Njc4OWFiY2RlZg",         // missing padding
      "whsec_MDEyMzQ1Njc4OWFiY2Rl",           // 15 bytes: too short
      "whsec_MDEyMzQ1Njc4OWFiY2Q=",           // 14 bytes
      "whsec_!!!!!!!!!!!!!!!!!!!!!!!!",       // not base64
      "whsec_MDEyMzQ1Njc4OWFi Y2RlZmdoaQ=",   // inner space
      "whsec_MDEyMzQ1Njc4OWFiY2RlZmd\nAAAA",  // inner newline
      "whsec_MDEyMzQ1Njc4OWFiY2RlZmdo-_-_",   // base64url alphabet
      "whsec_" + std::string(4100, 'A'),      // longer than 4096 characters
  };
  for (const auto& secret : rows) {
    CAPTURE(secret.substr(0, 60));
    CHECK_FALSE(decode_webhook_secret(secret));
  }
}

// Text that standard base64 decoders refuse must not become a signing key.
TEST_CASE("webhook_secret: rejects '=' outside the final padding and trailing whitespace") {
  const std::string rows[] = {
      "whsec_" + std::string(32, '='),       // nothing but padding
      "whsec_MDEy==Q1Njc4OWFiY2RlZmdo",      // padding in the middle
      "whsec_MDEyMzQ1Njc4OWFiY2RlZmdoA===",  // three padding characters
      "whsec_MDEyMzQ1Njc4OWFiY2RlZmdo    ",  // trailing spaces
  };
  for (const auto& secret : rows) {
    CAPTURE(secret);
    CHECK_FALSE(decode_webhook_secret(secret));
  }
}
