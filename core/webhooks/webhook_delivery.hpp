#pragma once
// What a run's end puts in the outbox, how a delivery looks in the API, and
// what happens after each attempt (the retry policy). Pure functions: the
// dispatcher in gateway/ does the I/O.
#include <boost/json/object.hpp>
#include <chrono>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/store_records.hpp"

namespace agw::core {

// The contract's completion payload for a run whose assistant message is `answer`
// ("complete" runs are reported as "done"; interrupted ones as "error").
webhook_delivery_record make_webhook_delivery(const std::string& session_id, const std::string& run_id, const std::string& url,
                                              const message_record& answer, std::int64_t input_tokens);

boost::json::object webhook_delivery_json(const webhook_delivery_record& d);

// What one attempt got back: an HTTP status, or a transport error.
struct attempt_result {
  std::optional<int> status_code;
  std::string error;                    // empty when a status came back
  std::optional<double> retry_after_s;  // from a 429/503's Retry-After, when given in seconds
  std::int64_t duration_ms = 0;
};

struct attempt_decision {
  std::string status;  // delivered | pending | failed
  std::optional<std::int64_t> next_attempt_at_ms;
};

// 2xx: delivered. Transport errors, 408, 429 and 5xx: retried after the next delay of
// `schedule` (±20 % jitter; at least Retry-After when one was sent) while the
// schedule lasts. Anything else (3xx — redirects are not followed —, other 4xx, 410): failed.
attempt_decision decide_after_attempt(const attempt_result& result, std::int64_t round_attempts_done,
                                      const std::vector<std::chrono::duration<double>>& schedule, std::int64_t now_ms,
                                      std::mt19937_64& rng);

// Retry-After as seconds ("120"), or nullopt (HTTP-dates are ignored: the schedule applies).
std::optional<double> parse_retry_after(std::string_view value);

}  // namespace agw::core
