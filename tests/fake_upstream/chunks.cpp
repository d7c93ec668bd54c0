#include "tests/fake_upstream/chunks.hpp"

#include <boost/json/serialize.hpp>

namespace agw::fake {

namespace json = boost::json;

std::string data_event(const json::value& v, const std::string& eol) { return "data: " + json::serialize(v) + eol + eol; }

std::string delta_event(const json::object& delta, const char* finish_reason, const std::string& eol) {
  json::object choice{{"index", 0}, {"delta", delta}};
  choice["finish_reason"] = finish_reason ? json::value(finish_reason) : json::value(nullptr);
  json::object chunk{{"id", "chatcmpl-fake"},
                     {"object", "chat.completion.chunk"},
                     {"created", 1700000000},
                     {"model", "fake"},
                     {"choices", json::array{choice}}};
  return data_event(chunk, eol);
}

std::string usage_event(long prompt_tokens, long completion_tokens, const std::string& eol) {
  json::object usage{{"prompt_tokens", prompt_tokens},
                     {"completion_tokens", completion_tokens},
                     {"total_tokens", prompt_tokens + completion_tokens}};
  json::object chunk{{"id", "chatcmpl-fake"}, {"object", "chat.completion.chunk"}, {"created", 1700000000},
                     {"model", "fake"},       {"choices", json::array{}},          {"usage", usage}};
  return data_event(chunk, eol);
}

std::string done_event(const std::string& eol) { return "data: [DONE]" + eol + eol; }

}  // namespace agw::fake
