#include "core/webhooks/webhook_delivery.hpp"

#include <boost/json/serialize.hpp>
#include <charconv>

#include "core/ids.hpp"
#include "core/time_format.hpp"

namespace agw::core {

namespace json = boost::json;

namespace {

// The longest wait a Retry-After may impose (a day): a receiver cannot park a delivery forever.
constexpr double max_retry_after_s = 86400;

json::value optional_time(const std::optional<std::int64_t>& ms) {
  if (!ms) return nullptr;
  return json::value(format_rfc3339_ms(*ms));
}

}  // namespace

webhook_delivery_record make_webhook_delivery(const std::string& session_id, const std::string& run_id, const std::string& url,
                                              const message_record& answer, std::int64_t input_tokens) {
  const std::string status = answer.status == "complete" ? "done" : answer.status == "aborted" ? "aborted" : "error";
  json::object payload{{"session_id", session_id},
                       {"message_id", answer.id},
                       {"run_id", run_id},
                       {"status", status},
                       {"output", answer.content},
                       {"token_usage", {{"input", input_tokens}, {"output", answer.token_count.value_or(0)}}},
                       {"model_used", answer.model_used ? json::value(*answer.model_used) : json::value(nullptr)},
                       {"completed_at", format_rfc3339_ms(answer.created_at_ms)}};
  webhook_delivery_record d;
  d.id = new_uuid();
  d.webhook_id = "msg_" + new_uuid();
  d.session_id = session_id;
  d.run_id = run_id;
  d.url = url;
  d.payload = json::serialize(payload);
  d.status = "pending";
  d.next_attempt_at_ms = answer.created_at_ms;
  d.created_at_ms = answer.created_at_ms;
  return d;
}

json::object webhook_delivery_json(const webhook_delivery_record& d) {
  json::array attempts;
  for (const auto& a : d.attempts) {
    attempts.push_back(json::object{{"at", format_rfc3339_ms(a.at_ms)},
                                    {"status_code", a.status_code ? json::value(*a.status_code) : json::value(nullptr)},
                                    {"error", a.error ? json::value(*a.error) : json::value(nullptr)},
                                    {"duration_ms", a.duration_ms}});
  }
  return {{"id", d.id},
          {"webhook_id", d.webhook_id},
          {"run_id", d.run_id},
          {"url", d.url},
          {"status", d.status},
          {"attempts", std::move(attempts)},
          {"next_attempt_at", d.status == "pending" ? optional_time(d.next_attempt_at_ms) : json::value(nullptr)},
          {"created_at", format_rfc3339_ms(d.created_at_ms)}};
}

attempt_decision decide_after_attempt(const attempt_result& result, std::int64_t round_attempts_done,
                                      const std::vector<std::chrono::duration<double>>& schedule, std::int64_t now_ms,
                                      std::mt19937_64& rng) {
  if (result.status_code && *result.status_code >= 200 && *result.status_code < 300) return {"delivered", std::nullopt};
  bool retryable = !result.status_code;
  if (result.status_code) {
    const int s = *result.status_code;
    retryable = s == 408 || s == 429 || (s >= 500 && s < 600);
  }
  // round_attempts_done counts this attempt: the next delay is schedule[done - 1].
  const auto index = static_cast<std::size_t>(round_attempts_done - 1);
  if (!retryable || round_attempts_done < 1 || index >= schedule.size()) return {"failed", std::nullopt};
  std::uniform_real_distribution<double> jitter(0.8, 1.2);
  double delay_s = schedule[index].count() * jitter(rng);
  if (result.retry_after_s) delay_s = std::max(delay_s, std::min(*result.retry_after_s, max_retry_after_s));
  return {"pending", now_ms + static_cast<std::int64_t>(delay_s * 1000.0)};
}

std::optional<double> parse_retry_after(std::string_view value) {
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  long long seconds = 0;
  auto [end, err] = std::from_chars(value.data(), value.data() + value.size(), seconds);
  if (value.empty() || err != std::errc() || end != value.data() + value.size() || seconds < 0) return std::nullopt;
  return static_cast<double>(seconds);
}

}  // namespace agw::core
