#include "tests/fake_upstream/scenario.hpp"

#include <boost/json/serialize.hpp>
#include <optional>

#include "tests/fake_upstream/chunks.hpp"

namespace agw::fake {

namespace json = boost::json;
using std::chrono::milliseconds;

long scenario_name::number(const std::string& key, long fallback) const {
  auto it = params.find(key);
  return it == params.end() ? fallback : std::stol(it->second);
}

scenario_name parse_scenario(const std::string& spelled) {
  scenario_name out;
  const auto colon = spelled.find(':');
  out.name = spelled.substr(0, colon);
  if (colon == std::string::npos) return out;
  std::string rest = spelled.substr(colon + 1);
  std::size_t at = 0;
  while (at <= rest.size()) {
    auto comma = rest.find(',', at);
    if (comma == std::string::npos) comma = rest.size();
    const auto item = rest.substr(at, comma - at);
    const auto eq = item.find('=');
    if (!item.empty()) out.params[item.substr(0, eq)] = eq == std::string::npos ? "1" : item.substr(eq + 1);
    at = comma + 1;
  }
  return out;
}

namespace {

const json::array& messages_of(const json::object& request) {
  static const json::array none;
  const auto* m = request.if_contains("messages");
  return m && m->is_array() ? m->get_array() : none;
}

long prompt_tokens(const json::object& request) { return static_cast<long>(messages_of(request).size()) * 7 + 3; }

// Cuts the whole body into pieces of `size` bytes (the first one after `delay`).
void split_into(script& s, const std::string& body, std::size_t size) {
  for (std::size_t at = 0; at < body.size(); at += size) s.pieces.push_back({milliseconds(0), body.substr(at, size)});
}

std::vector<std::string> words_of(const std::string& text) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < text.size()) {
    auto space = text.find(' ', at + 1);
    if (space == std::string::npos) space = text.size();
    out.push_back(text.substr(at, space - at));
    at = space;
  }
  return out;
}

// Role chunk, one token per piece at `rate` per second, then finish, usage and [DONE] (each optional).
script answer(const scenario_name& sc, const json::object& request, const std::vector<std::string>& tokens) {
  script s;
  const std::string eol = sc.params.count("crlf") ? "\r\n" : "\n";
  const long rate = sc.number("rate", 0);
  const milliseconds gap(rate > 0 ? 1000 / rate : 0);
  s.pieces.push_back({milliseconds(0), delta_event({{"role", "assistant"}, {"content", ""}}, nullptr, eol)});
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    std::string bytes = delta_event({{"content", tokens[i]}}, nullptr, eol);
    if (sc.params.count("keepalive")) bytes = ": keep-alive" + eol + eol + bytes;
    s.pieces.push_back({i == 0 ? milliseconds(sc.number("first_ms", 0)) : gap, bytes});
  }
  if (sc.number("finish", 1)) s.pieces.push_back({milliseconds(0), delta_event(json::object{}, "stop", eol)});
  if (sc.number("usage", 1))
    s.pieces.push_back({milliseconds(0), usage_event(prompt_tokens(request), static_cast<long>(tokens.size()), eol)});
  if (sc.number("done", 1)) s.pieces.push_back({milliseconds(0), done_event(eol)});
  return s;
}

std::vector<std::string> numbered_tokens(long n) {
  std::vector<std::string> out;
  for (long i = 0; i < n; ++i) out.push_back((i ? " tok" : "tok") + std::to_string(i));
  return out;
}

json::object call_fragment(std::optional<long> index, const std::string& id, const std::string& name, const std::string& args) {
  json::object fn;
  if (!name.empty()) fn["name"] = name;
  fn["arguments"] = args;
  json::object call{{"function", fn}};
  if (index) call["index"] = *index;
  if (!id.empty()) {
    call["id"] = id;
    call["type"] = "function";
  }
  return call;
}

std::string tool_delta(const json::object& call) { return delta_event({{"tool_calls", json::array{call}}}); }

// Two parallel calls, interleaved, their arguments cut across chunks; `split_ids`
// cuts the id and the name too (the gateway joins them; the openai SDK, like the
// hosted API, expects each whole in the call's first fragment).
std::string split_calls(const std::string& expr, bool split_ids) {
  const auto args = json::serialize(json::object{{"expression", expr}});
  std::string body =
      split_ids ? tool_delta(call_fragment(0, "call_ca", "calcu", "")) + tool_delta(call_fragment(0, "lc_1", "lator", ""))
                : tool_delta(call_fragment(0, "call_calc_1", "calculator", ""));
  body += tool_delta(call_fragment(1, "call_time_2", "current_time", "{"));
  body += tool_delta(call_fragment(0, "", "", args.substr(0, 5)));
  body += tool_delta(call_fragment(0, "", "", args.substr(5, 9)));
  body += tool_delta(call_fragment(1, "", "", "}"));
  body += tool_delta(call_fragment(0, "", "", args.substr(14)));
  return body;
}

// Ollama: every call whole, each as index 0 with its own id.
std::string ollama_calls(const std::string& expr) {
  const auto args = json::serialize(json::object{{"expression", expr}});
  return tool_delta(call_fragment(0, "call_calc_1", "calculator", args)) +
         tool_delta(call_fragment(0, "call_time_2", "current_time", "{}"));
}

// llama.cpp-like: no index, no id; the arguments split.
std::string unindexed_calls(const std::string& expr) {
  const auto args = json::serialize(json::object{{"expression", expr}});
  return tool_delta(call_fragment(std::nullopt, "", "calculator", args.substr(0, 7))) +
         tool_delta(call_fragment(std::nullopt, "", "", args.substr(7))) +
         tool_delta(call_fragment(std::nullopt, "", "current_time", "{}"));
}

script tool_calls(const scenario_name& sc, const json::object& request) {
  const auto style = sc.params.count("style") ? sc.params.at("style") : std::string("split");
  const auto expr = sc.params.count("expr") ? sc.params.at("expr") : std::string("2+3*4");
  std::string body = delta_event({{"role", "assistant"}, {"content", nullptr}});
  if (style == "ollama")
    body += ollama_calls(expr);
  else if (style == "noindex")
    body += unindexed_calls(expr);
  else
    body += split_calls(expr, style == "split_ids");
  const char* finish = sc.params.count("finish_stop") ? "stop" : "tool_calls";
  body += delta_event(json::object{}, finish) + usage_event(prompt_tokens(request), 9) + done_event();
  script s;
  // Awkward byte boundaries: pieces of a few bytes, cutting lines, JSON and UTF-8 alike.
  split_into(s, body, static_cast<std::size_t>(sc.number("piece", 7)));
  return s;
}

bool answered_tools(const json::object& request) {
  const auto& m = messages_of(request);
  return !m.empty() && m.back().is_object() && m.back().as_object().contains("role") && m.back().at("role") == "tool";
}

// The tool results the request carries after the last assistant turn, joined.
std::string tool_results(const json::object& request) {
  std::string out;
  for (const auto& m : messages_of(request))
    if (m.at("role") == "tool") out += (out.empty() ? "" : ", ") + std::string(m.at("content").as_string());
  return out;
}

script http_error(const scenario_name& sc) {
  script s;
  s.status = static_cast<int>(sc.number("code", 500));
  if (sc.params.count("retry_after")) s.headers.emplace_back("Retry-After", sc.params.at("retry_after"));
  const auto message = "fake says " + std::to_string(s.status);
  s.headers.emplace_back("Content-Type", "application/json");
  s.pieces.push_back(
      {milliseconds(0), json::serialize(json::object{{"error", json::object{{"message", message}, {"type", "fake_error"}}}})});
  return s;
}

}  // namespace

script script_for(const scenario_name& sc, const json::object& request, long attempt) {
  const auto& n = sc.name;
  if (n == "status") {
    // fail_times=k: the first k requests fail, the rest are answered.
    if (attempt < sc.number("fail_times", 1000000)) return http_error(sc);
    return answer(sc, request, numbered_tokens(sc.number("n", 3)));
  }
  if (n == "tools") {
    if (answered_tools(request)) return answer(sc, request, words_of("results: " + tool_results(request)));
    return tool_calls(sc, request);
  }
  if (n == "loop") return tool_calls(sc, request);
  if (n == "client_tool") {
    // One call of a tool the gateway's client declared (AG-UI front-end tools): name=<tool>.
    if (answered_tools(request)) return answer(sc, request, words_of("results: " + tool_results(request)));
    const auto name = sc.params.count("name") ? sc.params.at("name") : std::string("confirm");
    std::string body = delta_event({{"role", "assistant"}, {"content", nullptr}}) +
                       tool_delta(call_fragment(0, "call_client_1", name, R"({"question":"go on?"})")) +
                       delta_event(json::object{}, "tool_calls") + usage_event(prompt_tokens(request), 5) + done_event();
    script s;
    split_into(s, body, 64);
    return s;
  }
  if (n == "reasoning") {
    auto s = answer(sc, request, numbered_tokens(2));
    s.pieces.insert(s.pieces.begin() + 1, {milliseconds(0), delta_event({{"reasoning_content", "Let me think"}})});
    s.pieces.insert(s.pieces.begin() + 2, {milliseconds(0), delta_event({{"reasoning", " about it."}})});
    return s;
  }
  if (n == "midstream_error") {
    auto s = answer(sc, request, numbered_tokens(2));
    s.pieces.resize(3);
    s.pieces.push_back(
        {milliseconds(0), data_event(json::object{{"error", json::object{{"message", "the model crashed"}, {"code", 500}}}})});
    return s;
  }
  if (n == "garbage") {
    auto s = answer(sc, request, numbered_tokens(1));
    s.pieces.resize(2);
    s.pieces.push_back({milliseconds(0), "data: {this is not json\n\n"});
    return s;
  }
  if (n == "cut") {
    // Tokens, then the connection closes with neither finish_reason nor [DONE].
    auto s = answer(sc, request, numbered_tokens(sc.number("n", 3)));
    s.pieces.resize(s.pieces.size() - 3);
    s.finish_http = false;
    return s;
  }
  if (n == "stall") {
    auto s = answer(sc, request, numbered_tokens(2));
    s.pieces[2].delay = milliseconds(sc.number("ms", 60000));
    return s;
  }
  if (sc.number("stamp", 0)) return answer(sc, request, std::vector<std::string>(sc.number("n", 5), "t" + stamp_marker + ";"));
  return answer(sc, request, numbered_tokens(sc.number("n", 5)));
}

}  // namespace agw::fake
