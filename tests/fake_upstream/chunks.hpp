#pragma once
// The SSE lines of an OpenAI chat-completions stream, as the fake writes them.
#include <boost/json/object.hpp>
#include <string>

namespace agw::fake {

// "data: {...chat.completion.chunk with choices[0].delta = delta...}\n\n"
std::string delta_event(const boost::json::object& delta, const char* finish_reason = nullptr, const std::string& eol = "\n");
std::string usage_event(long prompt_tokens, long completion_tokens, const std::string& eol = "\n");
std::string done_event(const std::string& eol = "\n");
std::string data_event(const boost::json::value& v, const std::string& eol = "\n");

}  // namespace agw::fake
