#include "core/agents/openai/chat_chunk.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

namespace agw::core::openai {

namespace json = boost::json;

namespace {

std::string string_at(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->get_string()) : std::string();
}

std::optional<std::int64_t> integer_at(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  if (v && v->is_int64()) return v->get_int64();
  if (v && v->is_uint64()) return static_cast<std::int64_t>(v->get_uint64());
  return std::nullopt;
}

tool_call_fragment decode_fragment(const json::object& call) {
  tool_call_fragment f;
  f.index = integer_at(call, "index");
  f.id = string_at(call, "id");
  if (const auto* fn = call.if_contains("function"); fn && fn->is_object()) {
    f.name = string_at(fn->get_object(), "name");
    // Some servers send arguments as an object instead of its JSON text.
    const auto* args = fn->get_object().if_contains("arguments");
    if (args && args->is_string())
      f.arguments = std::string(args->get_string());
    else if (args && args->is_object())
      f.arguments = json::serialize(*args);
  }
  return f;
}

void decode_delta(const json::object& delta, chat_chunk& out) {
  out.content = string_at(delta, "content");
  out.reasoning = string_at(delta, "reasoning_content");
  if (out.reasoning.empty()) out.reasoning = string_at(delta, "reasoning");
  if (const auto* calls = delta.if_contains("tool_calls"); calls && calls->is_array())
    for (const auto& c : calls->get_array())
      if (c.is_object()) out.tool_calls.push_back(decode_fragment(c.get_object()));
}

std::optional<upstream_error> decode_error(const json::value& e) {
  if (e.is_string()) return upstream_error{"", std::string(e.get_string())};
  if (!e.is_object()) return upstream_error{"", json::serialize(e)};
  const auto& o = e.get_object();
  upstream_error out{string_at(o, "code"), string_at(o, "message")};
  if (out.code.empty()) out.code = string_at(o, "type");
  if (const auto code = integer_at(o, "code")) out.code = std::to_string(*code);
  if (out.message.empty()) out.message = json::serialize(o);
  return out;
}

}  // namespace

chat_chunk decode_chat_chunk(std::string_view data) {
  chat_chunk out;
  if (data == "[DONE]") {
    out.done = true;
    return out;
  }
  boost::system::error_code ec;
  auto parsed = json::parse(data, ec);
  if (ec || !parsed.is_object()) {
    out.malformed = true;
    return out;
  }
  const auto& o = parsed.get_object();
  if (const auto* e = o.if_contains("error"); e && !e->is_null()) out.error = decode_error(*e);
  if (const auto* u = o.if_contains("usage"); u && u->is_object())
    out.usage = usage_counts{integer_at(u->get_object(), "prompt_tokens").value_or(0),
                             integer_at(u->get_object(), "completion_tokens").value_or(0)};
  const auto* choices = o.if_contains("choices");
  // The usage chunk comes with "choices": [] (or none at all).
  if (!choices || !choices->is_array() || choices->get_array().empty()) return out;
  const auto& first = choices->get_array().front();
  if (!first.is_object()) return out;
  out.finish_reason = string_at(first.get_object(), "finish_reason");
  if (const auto* d = first.get_object().if_contains("delta"); d && d->is_object()) decode_delta(d->get_object(), out);
  return out;
}

}  // namespace agw::core::openai
