// Completion callbacks against the real binary: a receiver in this process
// (tests/support/webhook_receiver) plays the callback target and answers as
// each test scripts it. Covers the payload and headers, retries and their
// schedule, Retry-After, redirects, timeouts, refused connections, the
// concurrency bound, kill -9 and SIGTERM restarts (a pending delivery, an
// attempt in flight, a run cut short), redelivery, signatures (checked with the
// openssl CLI), the SSRF guard at POST and at connect time (no packet leaves
// loopback), deletion, and https (CA file, SNI, host-name verification).
#include <doctest/doctest.h>

#include <signal.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "tests/support/gateway_process.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/session_fixtures.hpp"
#include "tests/support/sse_reader.hpp"
#include "tests/support/webhook_receiver.hpp"

using namespace agw::test;
using namespace agw::test::runs;

namespace {

namespace json = boost::json;

// Loopback receivers need allow-private; retries come fast.
gateway_process::env_map private_env(const gateway_process::env_map& extra = {}) {
  gateway_process::env_map env{{"GATEWAY_WEBHOOK_ALLOW_PRIVATE", "1"}, {"GATEWAY_WEBHOOK_RETRY_SCHEDULE", "0.05,0.1,0.1"}};
  for (const auto& [k, v] : extra) env[k] = v;
  return env;
}

std::string callback_body(std::string_view content, std::string_view url) {
  return json::serialize(json::object{{"content", content}, {"callback_url", url}});
}

std::string webhooks_path(const std::string& sid) { return "/sessions/" + sid + "/webhooks"; }

// POST a message with a callback_url; requires the 200 stream's head.
std::unique_ptr<sse_reader> start_with_callback(std::uint16_t port, const std::string& sid, std::string_view content,
                                                std::string_view url) {
  auto r = std::make_unique<sse_reader>(port);
  r->send("POST", messages_path(sid), callback_body(content, url), json_headers);
  INFO("POST messages with callback_url " << url << " -> " << r->head.status << " " << r->head.body);
  REQUIRE(r->head.status == 200);
  REQUIRE(r->chunked);
  return r;
}

// The whole run, read to its end.
std::unique_ptr<sse_reader> run_with_callback(std::uint16_t port, const std::string& sid, std::string_view content,
                                              std::string_view url) {
  auto r = start_with_callback(port, sid, content, url);
  REQUIRE(r->read_to_end(20s));
  check_run_stream(*r, r->head.header("X-Run-Id"));
  return r;
}

json::array list_deliveries(std::uint16_t port, const std::string& sid) {
  auto v = get_json(port, webhooks_path(sid));
  REQUIRE(v.is_object());
  CHECK(v.as_object().size() == 1);
  REQUIRE(v.as_object().contains("deliveries"));
  REQUIRE(v.at("deliveries").is_array());
  return v.at("deliveries").as_array();
}

// Polls until the session's only delivery has `status` and at least `min_attempts` attempts.
json::object wait_for_delivery(std::uint16_t port, const std::string& sid, std::string_view status, std::size_t min_attempts = 1,
                               std::chrono::milliseconds total = 10s) {
  json::object last;
  const bool ok = eventually(
      [&] {
        auto all = list_deliveries(port, sid);
        if (all.size() != 1) return false;
        last = all[0].as_object();
        return last.at("status") == jstr(status) && last.at("attempts").as_array().size() >= min_attempts;
      },
      total);
  INFO("waiting for a '" << status << "' delivery with " << min_attempts << "+ attempts; last seen: " << json::serialize(last));
  REQUIRE(ok);
  return last;
}

bool is_rfc3339(const json::value& v) { return v.is_string() && fixtures::parse_rfc3339_ms(v.as_string()).has_value(); }
std::int64_t epoch_ms(const json::value& v) { return *fixtures::parse_rfc3339_ms(v.as_string()); }

std::set<std::string> keys_of(const json::object& o) {
  std::set<std::string> out;
  for (const auto& kv : o) out.insert(std::string(kv.key()));
  return out;
}

// A delivery of GET /sessions/{id}/webhooks, exactly as the contract shapes it.
void check_delivery_shape(const json::object& d) {
  INFO("delivery: " << json::serialize(d));
  CHECK(keys_of(d) ==
        std::set<std::string>{"id", "webhook_id", "run_id", "url", "status", "attempts", "next_attempt_at", "created_at"});
  REQUIRE(d.at("id").is_string());
  CHECK(!d.at("id").as_string().empty());
  REQUIRE(d.at("webhook_id").is_string());
  CHECK(d.at("webhook_id").as_string().starts_with("msg_"));
  REQUIRE(d.at("run_id").is_string());
  REQUIRE(d.at("url").is_string());
  REQUIRE(d.at("status").is_string());
  const std::string status = str(d.at("status"));
  CHECK((status == "pending" || status == "delivered" || status == "failed"));
  CHECK(is_rfc3339(d.at("created_at")));
  if (status == "pending")
    CHECK((d.at("next_attempt_at").is_null() || is_rfc3339(d.at("next_attempt_at"))));
  else
    CHECK(d.at("next_attempt_at").is_null());
  REQUIRE(d.at("attempts").is_array());
  std::int64_t previous_at = 0;
  for (const auto& a : d.at("attempts").as_array()) {
    INFO("attempt: " << json::serialize(a));
    REQUIRE(a.is_object());
    const auto& o = a.as_object();
    CHECK(keys_of(o) == std::set<std::string>{"at", "status_code", "error", "duration_ms"});
    REQUIRE(is_rfc3339(o.at("at")));
    CHECK(epoch_ms(o.at("at")) >= previous_at);
    CHECK(epoch_ms(o.at("at")) >= epoch_ms(d.at("created_at")));
    previous_at = epoch_ms(o.at("at"));
    CHECK((o.at("status_code").is_int64() || o.at("status_code").is_null()));
    CHECK((o.at("error").is_string() || o.at("error").is_null()));
    // An attempt has either an HTTP status or a transport error.
    CHECK(o.at("status_code").is_null() != o.at("error").is_null());
    REQUIRE(o.at("duration_ms").is_int64());
    CHECK(o.at("duration_ms").as_int64() >= 0);
  }
}

std::vector<std::int64_t> status_codes(const json::object& d) {
  std::vector<std::int64_t> out;
  for (const auto& a : d.at("attempts").as_array())
    out.push_back(a.at("status_code").is_null() ? -1 : a.at("status_code").as_int64());
  return out;
}

// The Standard Webhooks headers and the rest of what every callback request carries.
void check_request_headers(const received_request& r, std::string_view path = "/hook") {
  std::string all;
  for (const auto& [k, v] : r.headers) all += k + ": " + v + "\n";
  INFO("request headers:\n" << all);
  CHECK(r.method == "POST");
  CHECK(r.target == path);
  CHECK(r.header("content-type").starts_with("application/json"));
  CHECK(r.header("user-agent").starts_with("agent-gateway/"));
  CHECK(r.header("webhook-id").starts_with("msg_"));
  const std::string ts = r.header("webhook-timestamp");
  REQUIRE(!ts.empty());
  REQUIRE(ts.find_first_not_of("0123456789") == std::string::npos);
  REQUIRE(ts.size() <= 12);  // seconds, not milliseconds
  const auto arrived_s = std::chrono::duration_cast<std::chrono::seconds>(r.arrived_wall.time_since_epoch()).count();
  CHECK(std::llabs(std::stoll(ts) - arrived_s) <= 5);
}

// The payload against what the gateway persisted and streamed for the run.
void check_payload(const received_request& r, std::uint16_t port, const std::string& sid, const sse_reader& stream,
                   std::string_view status) {
  INFO("payload: " << r.body);
  auto parsed = try_json(r.body);
  REQUIRE(parsed.has_value());
  REQUIRE(parsed->is_object());
  const auto& p = parsed->as_object();
  CHECK(keys_of(p) == std::set<std::string>{"session_id", "message_id", "run_id", "status", "output", "token_usage", "model_used",
                                            "completed_at"});
  CHECK(p.at("session_id") == jstr(sid));
  CHECK(p.at("run_id") == jstr(stream.head.header("X-Run-Id")));
  CHECK(p.at("status") == jstr(status));

  auto messages = get_messages(port, sid);
  REQUIRE(!messages.empty());
  const auto& answer = messages[0].as_object();  // newest first
  INFO("persisted answer: " << json::serialize(answer));
  REQUIRE(answer.at("role") == "assistant");
  CHECK(p.at("message_id") == answer.at("id"));
  const auto* done = stream.parser.last("done");
  REQUIRE(done != nullptr);
  CHECK(p.at("message_id") == done->obj().at("assistant_data").at("id"));
  CHECK(p.at("output") == answer.at("content"));
  CHECK(p.at("output") == jstr(stream.parser.tokens()));
  CHECK(p.at("model_used") == answer.at("model_used"));

  REQUIRE(p.at("token_usage").is_object());
  const auto& usage = p.at("token_usage").as_object();
  CHECK(keys_of(usage) == std::set<std::string>{"input", "output"});
  const auto* usage_event = stream.parser.last("usage");
  REQUIRE(usage_event != nullptr);
  CHECK(usage.at("input") == usage_event->obj().at("input_tokens"));
  CHECK(usage.at("output") == usage_event->obj().at("output_tokens"));
  CHECK(usage.at("output") == answer.at("token_count"));

  REQUIRE(is_rfc3339(p.at("completed_at")));
  CHECK(std::llabs(epoch_ms(p.at("completed_at")) - epoch_ms(answer.at("created_at"))) <= 1000);
  CHECK(epoch_ms(p.at("completed_at")) <= fixtures::now_epoch_ms() + 1000);
}

std::string metrics_text(std::uint16_t port) { return http_call(port, "GET", "/metrics", "", {}).body; }

// The value of a counter line "name value" on /metrics (-1 when absent).
long long metric(const std::string& text, std::string_view name) {
  std::size_t pos = 0;
  while ((pos = text.find(name, pos)) != std::string::npos) {
    const bool line_start = pos == 0 || text[pos - 1] == '\n';
    const std::size_t after = pos + name.size();
    if (line_start && after < text.size() && text[after] == ' ') return std::stoll(text.substr(after + 1));
    pos = after;
  }
  return -1;
}

http_reply post_redeliver(std::uint16_t port, const std::string& sid, const std::string& delivery_id) {
  return http_call(port, "POST", webhooks_path(sid) + "/" + delivery_id + "/redeliver", "", {});
}

// --- signing helpers: the key, and the openssl CLI as the independent HMAC ---

std::string base64(const std::string& bytes) {
  static const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const unsigned v = (static_cast<unsigned char>(bytes[i]) << 16) | (static_cast<unsigned char>(bytes[i + 1]) << 8) |
                       static_cast<unsigned char>(bytes[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out += alphabet[(v >> s) & 63];
  }
  if (const std::size_t rest = bytes.size() - i; rest > 0) {
    unsigned v = static_cast<unsigned char>(bytes[i]) << 16;
    if (rest == 2) v |= static_cast<unsigned char>(bytes[i + 1]) << 8;
    out += alphabet[(v >> 18) & 63];
    out += alphabet[(v >> 12) & 63];
    out += rest == 2 ? alphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::string hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

std::string random_bytes(std::size_t n) {
  std::random_device rd;
  std::string out;
  for (std::size_t i = 0; i < n; ++i) out += static_cast<char>(rd() & 0xff);
  return out;
}

bool command_exists(const std::string& name) { return std::system(("command -v " + name + " >/dev/null 2>&1").c_str()) == 0; }

// base64(HMAC-SHA256(key, content)) by `openssl dgst`, over the exact bytes (through a file).
std::string openssl_hmac_base64(const std::string& key, const std::string& content) {
  temp_dir dir;
  const auto file = (dir.path() / "signed.bin").string();
  {
    std::ofstream out(file, std::ios::binary);
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
  }
  auto [status, out] =
      run_shell("openssl dgst -sha256 -mac HMAC -macopt hexkey:" + hex(key) + " -binary < '" + file + "' | base64 -w0");
  INFO("openssl output: " << out);
  REQUIRE(status == 0);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  REQUIRE(out.size() == 44);  // 32 bytes of HMAC-SHA256
  return out;
}

}  // namespace

// --- the payload ---------------------------------------------------------------

TEST_CASE("webhooks: a done run posts the contract's payload and headers, unsigned without a secret") {
  webhook_receiver receiver;
  gateway_process gw(private_env());
  const std::string sid = create_session(gw.port());
  auto stream = run_with_callback(gw.port(), sid, "hello webhook world", receiver.url());
  REQUIRE(receiver.wait_for(1, 10s));
  const auto r = receiver.request(0);
  check_request_headers(r);
  CHECK(!r.has_header("webhook-signature"));
  check_payload(r, gw.port(), sid, *stream, "done");
  CHECK(json::parse(r.body).at("output") == "hello webhook world");

  const auto d = wait_for_delivery(gw.port(), sid, "delivered");
  check_delivery_shape(d);
  CHECK(d.at("webhook_id") == jstr(r.header("webhook-id")));
  CHECK(d.at("run_id") == jstr(stream->head.header("X-Run-Id")));
  CHECK(d.at("url") == jstr(receiver.url()));
  CHECK(status_codes(d) == std::vector<std::int64_t>{200});
  CHECK(d.at("attempts").at(0).at("error").is_null());
  // Delivered once, and only once.
  std::this_thread::sleep_for(300ms);
  CHECK(receiver.count() == 1);
  CHECK(receiver.problems().empty());
  CHECK(metric(metrics_text(gw.port()), "gateway_webhooks_delivered_total") == 1);
}

TEST_CASE("webhooks: an aborted run reports status aborted with exactly the streamed content") {
  webhook_receiver receiver;
  gateway_process gw(private_env());
  const std::string sid = create_mock_session(gw.port(), R"({"tokens":400,"tokens_per_second":40})");
  auto stream = start_with_callback(gw.port(), sid, "go", receiver.url());
  REQUIRE(stream->read_until([](const sse_parser& p) { return p.count("token") >= 3; }, 10s));
  CHECK(receiver.count() == 0);  // nothing before the run ends
  auto aborted = http_call(gw.port(), "POST", "/sessions/" + sid + "/abort", "", {});
  REQUIRE(aborted.status == 200);
  REQUIRE(stream->read_to_end(10s));
  check_run_stream(*stream, stream->head.header("X-Run-Id"));
  REQUIRE(receiver.wait_for(1, 10s));
  const auto r = receiver.request(0);
  check_request_headers(r);
  check_payload(r, gw.port(), sid, *stream, "aborted");
  CHECK(get_messages(gw.port(), sid)[0].at("status") == "aborted");
  check_delivery_shape(wait_for_delivery(gw.port(), sid, "delivered"));
}

TEST_CASE("webhooks: a failed run reports status error with the content streamed before the failure") {
  webhook_receiver receiver;
  gateway_process gw(private_env());
  const std::string sid = create_mock_session(gw.port(), R"({"fail_after":2})");
  auto stream = run_with_callback(gw.port(), sid, "one two three four", receiver.url());
  CHECK(stream->parser.count("error") == 1);
  REQUIRE(receiver.wait_for(1, 10s));
  const auto r = receiver.request(0);
  check_request_headers(r);
  check_payload(r, gw.port(), sid, *stream, "error");
  CHECK(json::parse(r.body).at("output") == "one two");
  check_delivery_shape(wait_for_delivery(gw.port(), sid, "delivered"));
}

TEST_CASE("webhooks: no callback_url (absent or null) means no delivery and no request") {
  webhook_receiver receiver;
  gateway_process gw(private_env());
  const std::string sid = create_session(gw.port());
  auto plain = run_message(gw.port(), sid, "no callback here");
  auto with_null = std::make_unique<sse_reader>(gw.port());
  with_null->send("POST", messages_path(sid), R"({"content":"null callback","callback_url":null})", json_headers);
  REQUIRE(with_null->head.status == 200);
  REQUIRE(with_null->read_to_end(10s));
  CHECK(list_deliveries(gw.port(), sid).empty());
  std::this_thread::sleep_for(500ms);
  CHECK(receiver.count() == 0);
  CHECK(receiver.connections() == 0);
  CHECK(list_deliveries(gw.port(), sid).empty());
}

TEST_CASE("webhooks: the callback URL's path and query are requested as given, with its Host") {
  webhook_receiver receiver;
  gateway_process gw(private_env());
  const std::string sid = create_session(gw.port());
  const std::string path = "/hooks/run%20done?team=a&x=1";
  run_with_callback(gw.port(), sid, "where to", receiver.url(path));
  REQUIRE(receiver.wait_for(1, 10s));
  const auto r = receiver.request(0);
  check_request_headers(r, path);
  CHECK(r.header("host") == "127.0.0.1:" + std::to_string(receiver.port()));
  CHECK(r.header("content-length") == std::to_string(r.body.size()));
  CHECK(wait_for_delivery(gw.port(), sid, "delivered").at("url") == jstr(receiver.url(path)));
}

// --- retries ---------------------------------------------------------------------

TEST_CASE("webhooks: 500, 500, 200 is three attempts with one webhook-id, then delivered") {
  webhook_receiver receiver;
  receiver.script({receiver_reply::with_status(500), receiver_reply::with_status(500)});
  gateway_process gw(private_env());
  const std::string sid = create_session(gw.port());
  auto stream = run_with_callback(gw.port(), sid, "retry me", receiver.url());
  REQUIRE(receiver.wait_for(3, 10s));
  const auto d = wait_for_delivery(gw.port(), sid, "delivered", 3);
  std::this_thread::sleep_for(500ms);  // longer than the rest of the schedule
  const auto requests = receiver.requests();
  REQUIRE(requests.size() == 3);
  for (const auto& r : requests) {
    check_request_headers(r);
    CHECK(r.header("webhook-id") == requests[0].header("webhook-id"));
    CHECK(r.body == requests[0].body);  // the same payload, byte for byte
  }
  // The schedule's first delays (0.05 s, 0.1 s, ±20 %) are lower bounds on the gaps.
  CHECK(requests[1].arrived - requests[0].arrived >= 35ms);
  CHECK(requests[2].arrived - requests[1].arrived >= 75ms);

  const auto final_list = list_deliveries(gw.port(), sid);
  REQUIRE(final_list.size() == 1);
  const auto& delivered = final_list[0].as_object();
  check_delivery_shape(delivered);
  CHECK(delivered.at("status") == "delivered");
  CHECK(delivered.at("id") == d.at("id"));
  CHECK(delivered.at("webhook_id") == jstr(requests[0].header("webhook-id")));
  CHECK(status_codes(delivered) == std::vector<std::int64_t>{500, 500, 200});
  CHECK(delivered.at("next_attempt_at").is_null());
  for (const auto& a : delivered.at("attempts").as_array()) CHECK(a.at("error").is_null());

  const auto m = metrics_text(gw.port());
  CHECK(metric(m, "gateway_webhooks_retried_total") == 2);
  CHECK(metric(m, "gateway_webhooks_delivered_total") == 1);
  CHECK(metric(m, "gateway_webhooks_failed_total") == 0);
}

TEST_CASE("webhooks: a pending delivery shows its next_attempt_at") {
  webhook_receiver receiver(receiver_reply::with_status(503));
  gateway_process gw(private_env({{"GATEWAY_WEBHOOK_RETRY_SCHEDULE", "30"}}));
  const std::string sid = create_session(gw.port());
  run_with_callback(gw.port(), sid, "later", receiver.url());
  const auto d = wait_for_delivery(gw.port(), sid, "pending", 1);
  check_delivery_shape(d);
  CHECK(status_codes(d) == std::vector<std::int64_t>{503});
  REQUIRE(is_rfc3339(d.at("next_attempt_at")));
  const auto wait = epoch_ms(d.at("next_attempt_at")) - epoch_ms(d.at("attempts").at(0).at("at"));
  CHECK(wait >= 23000);  // 30 s - 20 % jitter
  CHECK(wait <= 37000);
}

TEST_CASE("webhooks: 410 fails the delivery after one attempt, with no retry") {
  webhook_receiver receiver;
  receiver.script({receiver_reply::with_status(410)});
  gateway_process gw(private_env());
  const std::string sid = create_session(gw.port());
  run_with_callback(gw.port(), sid, "gone", receiver.url());
  REQUIRE(receiver.wait_for(1, 10s));
  const auto d = wait_for_delivery(gw.port(), sid, "failed");
  std::this_thread::sleep_for(800ms);  // well past the whole schedule (0.25 s + jitter)
  CHECK(receiver.count() == 1);
  const auto after = list_deliveries(gw.port(), sid);
  REQUIRE(after.size() == 1);
  check_delivery_shape(after[0].as_object());
  CHECK(after[0].at("status") == "failed");
  CHECK(status_codes(after[0].as_object()) == std::vector<std::int64_t>{410});
  CHECK(after[0].at("next_attempt_at").is_null());
  CHECK(metric(metrics_text(gw.port()), "gateway_webhooks_failed_total") == 1);
}

TEST_CASE("webhooks: a redirect is not followed and fails the delivery") {
  webhook_receiver receiver;
  auto redirect = receiver_reply::with_status(302);
  redirect.headers.emplace_back("Location", receiver.url("/elsewhere"));
  receiver.script({redirect});
  gateway_process gw(private_env());
  const std::string sid = create_session(gw.port());
  run_with_callback(gw.port(), sid, "moved", receiver.url());
  const auto d = wait_for_delivery(gw.port(), sid, "failed");
  std::this_thread::sleep_for(500ms);
  REQUIRE(receiver.count() == 1);
  CHECK(receiver.request(0).target == "/hook");
  check_delivery_shape(d);
  CHECK(status_codes(d) == std::vector<std::int64_t>{302});
}

TEST_CASE("webhooks: 429 with Retry-After: 1 delays the next attempt by at least a second") {
  webhook_receiver receiver;
  receiver.script({receiver_reply::with_status(429, "1")});
  gateway_process gw(private_env());
  const std::string sid = create_session(gw.port());
  run_with_callback(gw.port(), sid, "slow down", receiver.url());
  REQUIRE(receiver.wait_for(2, 10s));
  const auto requests = receiver.requests();
  const auto gap = std::chrono::duration_cast<std::chrono::milliseconds>(requests[1].arrived - requests[0].arrived);
  INFO("gap between attempts: " << gap.count() << " ms");
  CHECK(gap >= 950ms);  // the schedule alone would retry after ~50 ms
  CHECK(requests[1].header("webhook-id") == requests[0].header("webhook-id"));
  const auto d = wait_for_delivery(gw.port(), sid, "delivered", 2);
  check_delivery_shape(d);
  CHECK(status_codes(d) == std::vector<std::int64_t>{429, 200});
}

TEST_CASE("webhooks: a receiver that never answers times out, is retried, and the retry delivers") {
  webhook_receiver receiver;
  receiver.script({receiver_reply::no_answer()});
  gateway_process gw(private_env({{"GATEWAY_WEBHOOK_TIMEOUT", "0.5"}}));
  const std::string sid = create_session(gw.port());
  run_with_callback(gw.port(), sid, "are you there", receiver.url());
  REQUIRE(receiver.wait_for(2, 10s));
  const auto requests = receiver.requests();
  CHECK(requests[1].arrived - requests[0].arrived >= 450ms);  // the 0.5 s timeout, then the retry
  CHECK(requests[1].header("webhook-id") == requests[0].header("webhook-id"));
  const auto d = wait_for_delivery(gw.port(), sid, "delivered", 2);
  check_delivery_shape(d);
  CHECK(status_codes(d) == std::vector<std::int64_t>{-1, 200});
  const auto& first = d.at("attempts").at(0).as_object();
  REQUIRE(first.at("error").is_string());
  const std::string error = str(first.at("error"));
  INFO("timeout attempt's error: " << error);
  CHECK((error.find("timed out") != std::string::npos || error.find("timeout") != std::string::npos));
  CHECK(first.at("duration_ms").as_int64() >= 450);
}

TEST_CASE("webhooks: a refused connection is recorded per attempt and fails when the schedule is used up") {
  const auto port = refused_loopback_port();
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/hook";
  gateway_process gw(private_env({{"GATEWAY_WEBHOOK_RETRY_SCHEDULE", "0.05,0.05"}}));
  const std::string sid = create_session(gw.port());
  run_with_callback(gw.port(), sid, "nobody home", url);
  const auto d = wait_for_delivery(gw.port(), sid, "failed", 3);
  check_delivery_shape(d);
  CHECK(d.at("url") == jstr(url));
  REQUIRE(d.at("attempts").as_array().size() == 3);  // n delays = n + 1 attempts
  for (const auto& a : d.at("attempts").as_array()) {
    INFO("attempt: " << json::serialize(a));
    CHECK(a.at("status_code").is_null());
    REQUIRE(a.at("error").is_string());
    const std::string error = str(a.at("error"));
    CHECK(error.find("connect") != std::string::npos);
    CHECK(error.find("refused") != std::string::npos);
  }
}

TEST_CASE("webhooks: GATEWAY_WEBHOOK_CONCURRENCY=1 sends one attempt at a time") {
  webhook_receiver receiver;
  receiver.script({receiver_reply::no_answer(), receiver_reply::no_answer(), receiver_reply::no_answer()});
  gateway_process gw(private_env({{"GATEWAY_WEBHOOK_CONCURRENCY", "1"}, {"GATEWAY_WEBHOOK_TIMEOUT", "0.4"}}));
  std::vector<std::string> sessions;
  for (int i = 0; i < 3; ++i) {
    sessions.push_back(create_session(gw.port()));
    run_with_callback(gw.port(), sessions.back(), "queue " + std::to_string(i), receiver.url());
  }
  REQUIRE(receiver.wait_for(6, 15s));
  const auto requests = receiver.requests();
  // The three first attempts each hang for the 0.4 s timeout: with one slot, none starts before the last gave up.
  for (std::size_t i = 1; i < 3; ++i) {
    const auto gap = std::chrono::duration_cast<std::chrono::milliseconds>(requests[i].arrived - requests[i - 1].arrived);
    INFO("gap before request " << i << ": " << gap.count() << " ms");
    CHECK(gap >= 350ms);
  }
  std::set<std::string> ids;
  for (const auto& r : requests) ids.insert(r.header("webhook-id"));
  CHECK(ids.size() == 3);
  for (const auto& sid : sessions) check_delivery_shape(wait_for_delivery(gw.port(), sid, "delivered", 2));
}

// --- restarts ----------------------------------------------------------------------

TEST_CASE("webhooks: a pending delivery survives kill -9 and is delivered after restart with the same webhook-id") {
  webhook_receiver receiver;
  receiver.script({receiver_reply::with_status(500)});
  gateway_process gw(private_env({{"GATEWAY_WEBHOOK_RETRY_SCHEDULE", "2"}}));
  const std::string sid = create_session(gw.port());
  run_with_callback(gw.port(), sid, "survive the crash", receiver.url());
  REQUIRE(receiver.wait_for(1, 10s));
  const auto before = wait_for_delivery(gw.port(), sid, "pending", 1);
  gw.kill9();
  CHECK(receiver.count() == 1);

  gw.start();  // same database, a new port
  REQUIRE(receiver.wait_for(2, 10s));
  const auto requests = receiver.requests();
  CHECK(requests[1].header("webhook-id") == requests[0].header("webhook-id"));
  CHECK(requests[1].body == requests[0].body);
  check_request_headers(requests[1]);
  const auto d = wait_for_delivery(gw.port(), sid, "delivered", 2);
  check_delivery_shape(d);
  CHECK(d.at("id") == before.at("id"));
  CHECK(status_codes(d) == std::vector<std::int64_t>{500, 200});
}

TEST_CASE("webhooks: an attempt cut by kill -9 is sent again after restart (at least once)") {
  webhook_receiver receiver;
  receiver.script({receiver_reply::no_answer()});
  gateway_process gw(private_env({{"GATEWAY_WEBHOOK_TIMEOUT", "30"}}));
  const std::string sid = create_session(gw.port());
  run_with_callback(gw.port(), sid, "mid-flight", receiver.url());
  REQUIRE(receiver.wait_for(1, 10s));
  gw.kill9();  // the attempt is in flight: nothing recorded yet
  gw.start();
  REQUIRE(receiver.wait_for(2, 10s));
  const auto requests = receiver.requests();
  CHECK(requests[1].header("webhook-id") == requests[0].header("webhook-id"));
  CHECK(requests[1].body == requests[0].body);
  const auto d = wait_for_delivery(gw.port(), sid, "delivered", 1);
  check_delivery_shape(d);
  CHECK(status_codes(d).back() == 200);
}

TEST_CASE("webhooks: a run cut short by kill -9 is reported after restart as status error") {
  webhook_receiver receiver;
  gateway_process gw(private_env());
  const std::string sid = create_mock_session(gw.port(), R"({"tokens":400,"tokens_per_second":40})");
  auto stream = start_with_callback(gw.port(), sid, "crash me", receiver.url());
  const std::string run_id = stream->head.header("X-Run-Id");
  REQUIRE(stream->read_until([](const sse_parser& p) { return p.count("token") >= 5; }, 10s));
  gw.kill9();
  CHECK(receiver.count() == 0);
  gw.start();  // recovery closes the run as interrupted and queues its callback
  REQUIRE(receiver.wait_for(1, 10s));
  const auto r = receiver.request(0);
  check_request_headers(r);
  INFO("payload: " << r.body);
  auto payload = try_json(r.body);
  REQUIRE(payload.has_value());
  const auto& p = payload->as_object();
  CHECK(keys_of(p) == std::set<std::string>{"session_id", "message_id", "run_id", "status", "output", "token_usage", "model_used",
                                            "completed_at"});
  CHECK(p.at("session_id") == jstr(sid));
  CHECK(p.at("run_id") == jstr(run_id));
  CHECK(p.at("status") == "error");
  auto messages = get_messages(gw.port(), sid);
  REQUIRE(messages.size() == 2);
  const auto& answer = messages[0].as_object();
  CHECK(answer.at("status") == "interrupted");
  CHECK(p.at("message_id") == answer.at("id"));
  CHECK(p.at("output") == answer.at("content"));
  CHECK(str(p.at("output")).starts_with("tok0 tok1"));
  REQUIRE(p.at("token_usage").is_object());
  CHECK(keys_of(p.at("token_usage").as_object()) == std::set<std::string>{"input", "output"});
  CHECK(p.at("token_usage").at("output") == answer.at("token_count"));
  CHECK(is_rfc3339(p.at("completed_at")));
  const auto d = wait_for_delivery(gw.port(), sid, "delivered");
  check_delivery_shape(d);
  CHECK(d.at("run_id") == jstr(run_id));
}

TEST_CASE("webhooks: SIGTERM does not wait for a hanging receiver; the attempt is sent again after restart") {
  webhook_receiver receiver;
  receiver.script({receiver_reply::no_answer()});
  gateway_process gw(private_env({{"GATEWAY_WEBHOOK_TIMEOUT", "30"}}));
  const std::string sid = create_session(gw.port());
  run_with_callback(gw.port(), sid, "drain me", receiver.url());
  REQUIRE(receiver.wait_for(1, 10s));
  // terminate() waits for the exit; a watchdog SIGKILLs the (not yet reaped) process should the drain hang.
  std::mutex m;
  std::condition_variable cv;
  bool exited = false;
  const pid_t pid = gw.pid();
  std::thread watchdog([&] {
    std::unique_lock lock(m);
    if (!cv.wait_for(lock, 20s, [&] { return exited; })) ::kill(pid, SIGKILL);
  });
  const auto started = clock_type::now();
  const int status = gw.terminate();
  const auto took = clock_type::now() - started;
  {
    std::lock_guard lock(m);
    exited = true;
  }
  cv.notify_all();
  watchdog.join();
  INFO("drain took " << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms; log: " << gw.stderr_text());
  CHECK(status == 0);
  CHECK(took < 15s);  // not the 30 s response timeout

  gw.start();
  REQUIRE(receiver.wait_for(2, 10s));
  const auto requests = receiver.requests();
  CHECK(requests[1].header("webhook-id") == requests[0].header("webhook-id"));
  CHECK(requests[1].body == requests[0].body);
  const auto d = wait_for_delivery(gw.port(), sid, "delivered");
  check_delivery_shape(d);
  CHECK(status_codes(d).back() == 200);
}

// --- redelivery ----------------------------------------------------------------------

TEST_CASE("webhooks: redeliver a failed delivery sends it again with the same webhook-id") {
  webhook_receiver receiver;
  receiver.script({receiver_reply::with_status(410)});
  gateway_process gw(private_env());
  const std::string sid = create_session(gw.port());
  run_with_callback(gw.port(), sid, "again please", receiver.url());
  const auto failed = wait_for_delivery(gw.port(), sid, "failed");
  REQUIRE(receiver.count() == 1);
  const std::string delivery_id = str(failed.at("id"));

  auto r = post_redeliver(gw.port(), sid, delivery_id);
  INFO("redeliver -> " << r.status << " " << r.body);
  REQUIRE(r.status == 202);
  CHECK(r.header("Content-Type").starts_with("application/json"));
  auto body = try_json(r.body);
  REQUIRE(body.has_value());
  REQUIRE(body->is_object());
  check_delivery_shape(body->as_object());
  CHECK(body->at("id") == jstr(delivery_id));
  CHECK(body->at("webhook_id") == failed.at("webhook_id"));

  REQUIRE(receiver.wait_for(2, 10s));
  const auto requests = receiver.requests();
  CHECK(requests[1].header("webhook-id") == requests[0].header("webhook-id"));
  CHECK(requests[1].body == requests[0].body);
  const auto d = wait_for_delivery(gw.port(), sid, "delivered", 2);
  check_delivery_shape(d);
  CHECK(status_codes(d).front() == 410);
  CHECK(status_codes(d).back() == 200);

  // Unknown delivery, unknown session: the contract's 404.
  check_error(post_redeliver(gw.port(), sid, "00000000-0000-4000-8000-000000000000"), 404, "not_found");
  check_error(post_redeliver(gw.port(), "00000000-0000-4000-8000-000000000000", delivery_id), 404, "not_found");
  check_error(http_call(gw.port(), "GET", webhooks_path("00000000-0000-4000-8000-000000000000")), 404, "not_found");
}

TEST_CASE("webhooks: redeliver of a pending delivery is a 409 delivery_pending that changes nothing") {
  webhook_receiver receiver(receiver_reply::with_status(500));
  gateway_process gw(private_env({{"GATEWAY_WEBHOOK_RETRY_SCHEDULE", "30"}}));
  const std::string sid = create_session(gw.port());
  run_with_callback(gw.port(), sid, "still pending", receiver.url());
  const auto pending = wait_for_delivery(gw.port(), sid, "pending", 1);
  check_error(post_redeliver(gw.port(), sid, str(pending.at("id"))), 409, "delivery_pending");
  const auto after = list_deliveries(gw.port(), sid);
  REQUIRE(after.size() == 1);
  CHECK(after[0].as_object() == pending);
  std::this_thread::sleep_for(300ms);
  CHECK(receiver.count() == 1);
}

// --- signatures ----------------------------------------------------------------------

TEST_CASE("webhooks: with a secret every attempt carries the Standard Webhooks signature (checked with openssl)") {
  if (!command_exists("openssl") || !command_exists("base64"))
    FAIL(
        "the openssl and base64 CLIs are needed to check signatures independently: run scripts/setup.sh "
        "(it installs Debian's openssl)");
  const std::string key = random_bytes(32);
  const std::string secret = "whsec_" + base64(key);
  webhook_receiver receiver;
  receiver.script({receiver_reply::with_status(500)});
  gateway_process gw(private_env({{"GATEWAY_WEBHOOK_SECRET", secret}}));
  const std::string sid = create_session(gw.port());
  auto stream = run_with_callback(gw.port(), sid, "sign this, with \"quotes\" and \xc3\xa9 unicode", receiver.url());
  REQUIRE(receiver.wait_for(2, 10s));
  wait_for_delivery(gw.port(), sid, "delivered", 2);
  for (const auto& r : receiver.requests()) {
    check_request_headers(r);
    const std::string id = r.header("webhook-id"), ts = r.header("webhook-timestamp");
    const std::string expected = "v1," + openssl_hmac_base64(key, id + "." + ts + "." + r.body);
    INFO("body: " << r.body);
    CHECK(r.header("webhook-signature") == expected);
    // A tampered body would not match.
    CHECK(openssl_hmac_base64(key, id + "." + ts + "." + r.body + " ") != expected.substr(3));
  }
  check_payload(receiver.request(0), gw.port(), sid, *stream, "done");
}

// --- the SSRF guard --------------------------------------------------------------------

TEST_CASE("webhooks: callback URLs to private, loopback, link-local or malformed targets are refused with 400, nothing stored") {
  // No allow-private. Every URL below is refused by validation before any connect:
  // IP literals are judged without DNS, `localhost` and the legacy numeric forms
  // resolve locally (/etc/hosts, inet_aton). The mock thinks for a long time so
  // that a URL wrongly accepted is caught before its run ends and anything is sent.
  gateway_process gw(gateway_process::env_map{{"GATEWAY_WEBHOOK_RETRY_SCHEDULE", "0.05"}});
  const std::string sid = create_mock_session(gw.port(), R"({"think_ms":30000})");
  const std::vector<std::string> urls{
      "http://127.0.0.1/",
      "http://127.0.0.1:8080/hook",
      "http://10.0.0.1/",
      "http://169.254.169.254/latest/meta-data",
      "http://[::1]/",
      "http://[fe80::1]/",
      "http://localhost/",
      "http://LOCALHOST:9/x",
      "ftp://x",
      "http://user:pw@host/",
      // Too long, on a name under the reserved .invalid TLD: a regression that let it
      // through could not even start a DNS query for a real public name.
      "http://callback.invalid/" + std::string(5000, 'a'),
      "http://[::ffff:127.0.0.1]/",
      "http://[::ffff:169.254.169.254]/",
      "http://[64:ff9b::a9fe:a9fe]/",
      "http://0.0.0.0/",
      "http://[::]/",
      "http://100.64.0.1/",
      "http://172.16.0.1/",
      "http://192.168.1.1/",
      "http://[fc00::1]/",
      "http://224.0.0.1/",
      "http://255.255.255.255/",
      "http://127.1/",
      "http://2130706433/",
      "http://0x7f.1/",
      "not a url",
      "https://",
      "/relative/path",
      "http://127.0.0.1/#fragment",
      "",
  };
  std::vector<std::string> bodies;
  for (const auto& u : urls) bodies.push_back(callback_body("hi", u));
  for (const auto* raw : {R"({"content":"hi","callback_url":123})", R"({"content":"hi","callback_url":true})",
                          R"({"content":"hi","callback_url":["http://x/"]})", R"({"content":"hi","callback_url":{"url":"x"}})"})
    bodies.emplace_back(raw);

  for (const auto& body : bodies) {
    INFO("body: " << body.substr(0, 200));
    sse_reader r(gw.port());
    r.send("POST", messages_path(sid), body, json_headers);
    if (r.head.status != 400) {
      gw.kill9();  // stop the accepted run before it ends and its callback goes out
      FAIL("a refused callback_url was accepted: " << r.head.status);
    }
    check_error(r.head.status, r.head.header("Content-Type"), r.head.body, 400, "bad_request");
  }
  const auto s = get_session(gw.port(), sid);
  CHECK(s.at("message_count") == 0);
  CHECK(s.at("last_event_id") == 0);
  CHECK(s.at("run").is_null());
  CHECK(list_deliveries(gw.port(), sid).empty());
  CHECK(get_messages(gw.port(), sid).empty());
}

TEST_CASE("webhooks: GATEWAY_WEBHOOK_ALLOWLIST admits a listed loopback range and nothing else") {
  webhook_receiver receiver;
  gateway_process gw(
      gateway_process::env_map{{"GATEWAY_WEBHOOK_ALLOWLIST", "127.0.0.1/32"}, {"GATEWAY_WEBHOOK_RETRY_SCHEDULE", "0.05"}});
  const std::string sid = create_session(gw.port());
  // Not in the list: still refused (an IP literal, no packet sent).
  for (const std::string u : {"http://127.0.0.2/", "http://10.0.0.1/"}) {
    INFO("url: " << u);
    auto refused = http_call(gw.port(), "POST", messages_path(sid), callback_body("hi", u));
    check_error(refused, 400, "bad_request");
  }
  CHECK(get_session(gw.port(), sid).at("message_count") == 0);
  run_with_callback(gw.port(), sid, "allowed", receiver.url());
  REQUIRE(receiver.wait_for(1, 10s));
  check_request_headers(receiver.request(0));
  check_delivery_shape(wait_for_delivery(gw.port(), sid, "delivered"));
}

TEST_CASE("webhooks: a stored delivery whose target the policy now refuses is refused at connect time, never sent") {
  // The POST-time check passed (loopback allowed); the connect-time check runs on the
  // address about to be used, so a target that stopped being allowed (a DNS answer
  // rebound to a private address, here the operator's rule) is never contacted. An
  // IP literal: no DNS, and no packet leaves loopback.
  webhook_receiver receiver;
  receiver.script({receiver_reply::no_answer()});
  gateway_process allowed(private_env({{"GATEWAY_WEBHOOK_TIMEOUT", "30"}}));
  const std::string sid = create_session(allowed.port());
  run_with_callback(allowed.port(), sid, "rebound", receiver.url());
  REQUIRE(receiver.wait_for(1, 10s));
  allowed.kill9();  // the attempt was in flight: the delivery stays pending, due now
  REQUIRE(receiver.connections() == 1);

  // Same database, private targets no longer allowed.
  gateway_process strict(gateway_process::env_map{{"GATEWAY_DB_PATH", allowed.db_path()},
                                                  {"GATEWAY_WEBHOOK_ALLOW_PRIVATE", "0"},
                                                  {"GATEWAY_WEBHOOK_RETRY_SCHEDULE", "0.05"}});
  const auto d = wait_for_delivery(strict.port(), sid, "failed", 2);
  check_delivery_shape(d);
  CHECK(d.at("url") == jstr(receiver.url()));
  // A refusal counts as a connect error: retried on the schedule (one delay: two attempts), then failed.
  REQUIRE(d.at("attempts").as_array().size() == 2);
  for (const auto& a : d.at("attempts").as_array()) {
    INFO("attempt: " << json::serialize(a));
    CHECK(a.at("status_code").is_null());
    REQUIRE(a.at("error").is_string());
    const std::string error = str(a.at("error"));
    CHECK(error.find("127.0.0.1") != std::string::npos);
    CHECK(error.find("loopback") != std::string::npos);
    CHECK(error.find("GATEWAY_WEBHOOK_ALLOW_PRIVATE") != std::string::npos);
  }
  std::this_thread::sleep_for(300ms);
  CHECK(receiver.connections() == 1);  // only the first process's attempt ever connected
  CHECK(receiver.count() == 1);
  const auto m = metrics_text(strict.port());
  CHECK(metric(m, "gateway_webhooks_failed_total") == 1);
  CHECK(metric(m, "gateway_webhooks_delivered_total") == 0);
  // A new callback to the same target is refused at POST time by the same rule.
  check_error(http_call(strict.port(), "POST", messages_path(sid), callback_body("again", receiver.url())), 400, "bad_request");
}

// --- deletion ----------------------------------------------------------------------------

TEST_CASE("webhooks: deleting a session with a pending delivery drops it; the dispatcher carries on") {
  webhook_receiver receiver(receiver_reply::with_status(500));
  gateway_process gw(private_env({{"GATEWAY_WEBHOOK_RETRY_SCHEDULE", "0.2,0.2,0.2,0.2,0.2,0.2"}}));
  const std::string sid = create_session(gw.port());
  run_with_callback(gw.port(), sid, "doomed", receiver.url());
  REQUIRE(receiver.wait_for(1, 10s));
  wait_for_delivery(gw.port(), sid, "pending", 1);
  auto del = http_call(gw.port(), "DELETE", "/sessions/" + sid, "", {});
  REQUIRE(del.status == 204);
  const auto at_delete = receiver.count();
  check_error(http_call(gw.port(), "GET", webhooks_path(sid)), 404, "not_found");
  std::this_thread::sleep_for(1200ms);       // several schedule steps
  CHECK(receiver.count() <= at_delete + 1);  // at most one attempt that was already in flight
  CHECK(http_call(gw.port(), "GET", "/healthz", "", {}).status == 200);
  check_error(http_call(gw.port(), "GET", webhooks_path(sid)), 404, "not_found");

  // The dispatcher still delivers for other sessions.
  webhook_receiver second;
  const std::string other = create_session(gw.port());
  run_with_callback(gw.port(), other, "still alive", second.url());
  REQUIRE(second.wait_for(1, 10s));
  check_delivery_shape(wait_for_delivery(gw.port(), other, "delivered"));
}

// --- https -------------------------------------------------------------------------------

namespace {

// A self-signed certificate for 127.0.0.1 (CN and IP SAN), made by the openssl CLI.
bool make_self_signed(const temp_dir& dir, tls_files& out) {
  out.cert_pem_path = (dir.path() / "cert.pem").string();
  out.key_pem_path = (dir.path() / "key.pem").string();
  auto [status, text] = run_shell(
      "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 "
      "-addext subjectAltName=IP:127.0.0.1 -keyout '" +
      out.key_pem_path + "' -out '" + out.cert_pem_path + "' 2>&1");
  INFO("openssl req: " << text);
  return status == 0;
}

// Writes `text` to `path`.
void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// A test CA (ca.pem) and, for each name, a certificate it signed for DNS:<name> (<name>.pem, <name>.key).
bool make_ca_and_leaves(const temp_dir& dir, const std::vector<std::string>& names) {
  const auto at = [&](const std::string& file) { return "'" + (dir.path() / file).string() + "'"; };
  std::string script =
      "set -e; openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 "
      "-subj /CN=agent-gateway-test-ca -keyout " +
      at("ca.key") + " -out " + at("ca.pem") + "; ";
  for (const auto& name : names) {
    write_file((dir.path() / (name + ".ext")).string(),
               "subjectAltName=DNS:" + name + "\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n");
    script += "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=" + name + " -keyout " +
              at(name + ".key") + " -out " + at(name + ".csr") + "; openssl x509 -req -in " + at(name + ".csr") + " -CA " +
              at("ca.pem") + " -CAkey " + at("ca.key") + " -set_serial 0x" + hex(random_bytes(8)) + " -days 2 -extfile " +
              at(name + ".ext") + " -out " + at(name + ".pem") + "; ";
  }
  auto [status, text] = run_shell("(" + script + ") 2>&1");
  INFO("openssl: " << text);
  return status == 0;
}

}  // namespace

TEST_CASE("webhooks: https to a host name sends SNI and verifies the certificate's name") {
  // One CA trusted through GATEWAY_WEBHOOK_CA_FILE signs two certificates, both served
  // on 127.0.0.1 and called as https://localhost:<port>/ (localhost resolves to
  // loopback): the one for DNS:localhost is accepted, the one for DNS:other.example
  // (trusted too, only its name differs) is refused by the host-name check.
  if (!command_exists("openssl"))
    FAIL("the openssl CLI is needed to make the receivers' certificates: run scripts/setup.sh (it installs Debian's openssl)");
  temp_dir dir;
  REQUIRE(make_ca_and_leaves(dir, {"localhost", "other.example"}));
  const auto file = [&](const std::string& name) { return (dir.path() / name).string(); };
  webhook_receiver matching({}, tls_files{file("localhost.pem"), file("localhost.key")});
  webhook_receiver mismatched({}, tls_files{file("other.example.pem"), file("other.example.key")});
  gateway_process gw(private_env({{"GATEWAY_WEBHOOK_CA_FILE", file("ca.pem")}, {"GATEWAY_WEBHOOK_RETRY_SCHEDULE", "0.05"}}));

  const std::string good = create_session(gw.port());
  const std::string good_url = matching.url_with_host("localhost");
  REQUIRE(good_url.starts_with("https://localhost:"));
  auto stream = run_with_callback(gw.port(), good, "by name", good_url);
  REQUIRE(matching.wait_for(1, 10s));
  check_request_headers(matching.request(0));
  CHECK(matching.request(0).header("host") == "localhost:" + std::to_string(matching.port()));
  check_payload(matching.request(0), gw.port(), good, *stream, "done");
  const auto delivered = wait_for_delivery(gw.port(), good, "delivered");
  check_delivery_shape(delivered);
  CHECK(delivered.at("url") == jstr(good_url));
  CHECK(status_codes(delivered) == std::vector<std::int64_t>{200});
  CHECK(matching.tls_handshake_failures() == 0);
  CHECK(matching.tls_server_names() == std::vector<std::string>{"localhost"});

  const std::string bad = create_session(gw.port());
  run_with_callback(gw.port(), bad, "wrong name", mismatched.url_with_host("localhost"));
  const auto failed = wait_for_delivery(gw.port(), bad, "failed", 2);
  check_delivery_shape(failed);
  REQUIRE(failed.at("attempts").as_array().size() == 2);
  for (const auto& a : failed.at("attempts").as_array()) {
    INFO("attempt: " << json::serialize(a));
    CHECK(a.at("status_code").is_null());
    REQUIRE(a.at("error").is_string());
    const std::string error = str(a.at("error"));
    CHECK(error.starts_with("tls"));
    CHECK(error.find("certificate") != std::string::npos);
  }
  CHECK(mismatched.count() == 0);  // no request ever got through
  // The receiver counts a failed handshake when it sees the gateway's alert (maybe just after the attempt is recorded).
  CHECK(eventually([&] { return mismatched.tls_handshake_failures() == 2; }, 5s));
  CHECK(mismatched.tls_server_names().size() == 2);
  for (const auto& name : mismatched.tls_server_names()) CHECK(name == "localhost");
}

TEST_CASE("webhooks: https to a self-signed receiver is delivered with its CA file and refused without it") {
  if (!command_exists("openssl"))
    FAIL("the openssl CLI is needed to make the receiver's certificate: run scripts/setup.sh (it installs Debian's openssl)");
  temp_dir dir;
  tls_files files;
  REQUIRE(make_self_signed(dir, files));
  webhook_receiver receiver({}, files);
  REQUIRE(receiver.url().starts_with("https://127.0.0.1:"));

  SUBCASE("trusted through GATEWAY_WEBHOOK_CA_FILE") {
    gateway_process gw(private_env({{"GATEWAY_WEBHOOK_CA_FILE", files.cert_pem_path}}));
    const std::string sid = create_session(gw.port());
    auto stream = run_with_callback(gw.port(), sid, "over tls", receiver.url());
    REQUIRE(receiver.wait_for(1, 10s));
    check_request_headers(receiver.request(0));
    check_payload(receiver.request(0), gw.port(), sid, *stream, "done");
    const auto d = wait_for_delivery(gw.port(), sid, "delivered");
    check_delivery_shape(d);
    CHECK(status_codes(d) == std::vector<std::int64_t>{200});
    CHECK(receiver.tls_handshake_failures() == 0);
  }
  SUBCASE("not trusted: the certificate check fails the attempt") {
    gateway_process gw(private_env({{"GATEWAY_WEBHOOK_RETRY_SCHEDULE", "0.05"}}));
    const std::string sid = create_session(gw.port());
    run_with_callback(gw.port(), sid, "over tls", receiver.url());
    const auto d = wait_for_delivery(gw.port(), sid, "failed", 2);
    check_delivery_shape(d);
    for (const auto& a : d.at("attempts").as_array()) {
      INFO("attempt: " << json::serialize(a));
      CHECK(a.at("status_code").is_null());
      REQUIRE(a.at("error").is_string());
      const std::string error = str(a.at("error"));
      CHECK(error.starts_with("tls"));
      CHECK(error.find("certificate") != std::string::npos);
    }
    CHECK(receiver.count() == 0);  // no request ever got through
    CHECK(receiver.tls_handshake_failures() >= 1);
  }
}
