#include "core/webhooks/webhook_delivery.hpp"

#include <doctest/doctest.h>
#include <boost/json/parse.hpp>

#include "core/webhooks/webhook_secret.hpp"
#include "core/webhooks/webhook_signature.hpp"

namespace {

using namespace agw::core;
using seconds = std::chrono::duration<double>;

const std::vector<seconds> schedule{seconds(1), seconds(10), seconds(100)};

attempt_result status(int code) {
  attempt_result r;
  r.status_code = code;
  return r;
}

attempt_result transport_error() {
  attempt_result r;
  r.error = "connect: Connection refused";
  return r;
}

}  // namespace

TEST_CASE("webhook_delivery: the payload follows the contract") {
  message_record answer;
  answer.id = "m1";
  answer.content = "Hello there";
  answer.token_count = 2;
  answer.model_used = "mock";
  answer.status = "aborted";
  answer.created_at_ms = 1'795'323'546'123;
  auto d = make_webhook_delivery("s1", "r1", "https://x/h", answer, 7);
  auto p = boost::json::parse(d.payload).as_object();
  CHECK(p.size() == 8);
  CHECK(p.at("session_id") == "s1");
  CHECK(p.at("message_id") == "m1");
  CHECK(p.at("run_id") == "r1");
  CHECK(p.at("status") == "aborted");
  CHECK(p.at("output") == "Hello there");
  CHECK(p.at("token_usage").at("input") == 7);
  CHECK(p.at("token_usage").at("output") == 2);
  CHECK(p.at("model_used") == "mock");
  CHECK(p.at("completed_at") == "2026-11-22T04:59:06.123Z");
  CHECK(d.status == "pending");
  CHECK(d.webhook_id.starts_with("msg_"));
  CHECK(d.next_attempt_at_ms == answer.created_at_ms);

  answer.status = "complete";
  CHECK(boost::json::parse(make_webhook_delivery("s", "r", "u", answer, 0).payload).at("status") == "done");
  answer.status = "error";
  CHECK(boost::json::parse(make_webhook_delivery("s", "r", "u", answer, 0).payload).at("status") == "error");
  answer.status = "interrupted";
  CHECK(boost::json::parse(make_webhook_delivery("s", "r", "u", answer, 0).payload).at("status") == "error");
}

TEST_CASE("webhook_delivery: 2xx delivers, retryable answers follow the schedule, others fail") {
  std::mt19937_64 rng(42);
  const std::int64_t now = 1'000'000;
  for (int code : {200, 201, 204, 299}) CHECK(decide_after_attempt(status(code), 1, schedule, now, rng).status == "delivered");
  for (int code : {301, 302, 400, 401, 403, 404, 410, 413, 422}) {
    CAPTURE(code);
    CHECK(decide_after_attempt(status(code), 1, schedule, now, rng).status == "failed");
  }
  for (const auto& r : {status(408), status(429), status(500), status(502), status(503), status(599), transport_error()}) {
    auto first = decide_after_attempt(r, 1, schedule, now, rng);
    CHECK(first.status == "pending");
    REQUIRE(first.next_attempt_at_ms);
    CHECK(*first.next_attempt_at_ms >= now + 800);
    CHECK(*first.next_attempt_at_ms <= now + 1200);
    auto third = decide_after_attempt(r, 3, schedule, now, rng);
    CHECK(*third.next_attempt_at_ms >= now + 80'000);
    CHECK(*third.next_attempt_at_ms <= now + 120'000);
    // n delays = n + 1 attempts.
    CHECK(decide_after_attempt(r, 4, schedule, now, rng).status == "failed");
  }
  CHECK(decide_after_attempt(status(500), 1, {}, now, rng).status == "failed");
}

TEST_CASE("webhook_delivery: jitter spreads retries within plus or minus 20 percent") {
  std::mt19937_64 rng(7);
  std::int64_t lo = INT64_MAX, hi = 0;
  for (int i = 0; i < 2000; ++i) {
    auto d = decide_after_attempt(status(503), 2, schedule, 0, rng);
    lo = std::min(lo, *d.next_attempt_at_ms);
    hi = std::max(hi, *d.next_attempt_at_ms);
  }
  CHECK(lo >= 8000);
  CHECK(hi <= 12000);
  CHECK(hi - lo > 3000);  // really spread, not a constant
}

TEST_CASE("webhook_delivery: Retry-After sets a floor, capped at a day") {
  std::mt19937_64 rng(1);
  auto r = status(429);
  r.retry_after_s = 30;
  CHECK(*decide_after_attempt(r, 1, schedule, 0, rng).next_attempt_at_ms == 30'000);
  r.retry_after_s = 0;
  CHECK(*decide_after_attempt(r, 1, schedule, 0, rng).next_attempt_at_ms >= 800);
  r.retry_after_s = 10'000'000;
  CHECK(*decide_after_attempt(r, 1, schedule, 0, rng).next_attempt_at_ms == 86'400'000);
  CHECK(parse_retry_after("120") == 120.0);
  CHECK(parse_retry_after(" 5 ") == 5.0);
  CHECK_FALSE(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"));
  CHECK_FALSE(parse_retry_after("-1"));
  CHECK_FALSE(parse_retry_after(""));
  CHECK_FALSE(parse_retry_after("1.5"));
}

TEST_CASE("webhook_delivery: the API view lists attempts and hides next_attempt_at unless pending") {
  webhook_delivery_record d;
  d.id = "d1";
  d.webhook_id = "msg_1";
  d.run_id = "r1";
  d.url = "http://x/";
  d.status = "failed";
  d.next_attempt_at_ms = 5;
  d.created_at_ms = 0;
  d.attempts.push_back({1, 0, 500, std::nullopt, 12});
  d.attempts.push_back({2, 1000, std::nullopt, std::string("response: timed out"), 500});
  auto j = webhook_delivery_json(d);
  CHECK(j.size() == 8);
  CHECK(j.at("next_attempt_at").is_null());
  CHECK(j.at("attempts").as_array().size() == 2);
  CHECK(j.at("attempts").at(0).at("status_code") == 500);
  CHECK(j.at("attempts").at(0).at("error").is_null());
  CHECK(j.at("attempts").at(1).at("status_code").is_null());
  CHECK(j.at("attempts").at(1).at("error") == "response: timed out");
  CHECK(j.at("attempts").at(1).at("duration_ms") == 500);
  CHECK(j.at("attempts").at(1).at("at") == "1970-01-01T00:00:01.000Z");
  d.status = "pending";
  CHECK(webhook_delivery_json(d).at("next_attempt_at") == "1970-01-01T00:00:00.005Z");
}

TEST_CASE("webhook_signature: matches the Standard Webhooks reference vector") {
  // The example in the Standard Webhooks specification and its reference libraries' tests.
  auto key = decode_webhook_secret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
  REQUIRE(key);
  CHECK(webhook_signature(*key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, R"({"test": 2432232314})") ==
        "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
  CHECK(base64_encode("") == "");
  CHECK(base64_encode("f") == "Zg==");
  CHECK(base64_encode("fo") == "Zm8=");
  CHECK(base64_encode("foo") == "Zm9v");
}
