#include "gateway/json_log_formatter.hpp"

#include <cstdio>

namespace agw::gateway {
namespace {

class escaped_message final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    append_json_escaped(std::string_view(msg.payload.data(), msg.payload.size()), dest);
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<escaped_message>(); }
};

}  // namespace

void append_json_escaped(std::string_view text, spdlog::memory_buf_t& out) {
  auto put = [&out](std::string_view s) { out.append(s.data(), s.data() + s.size()); };
  for (char c : text) {
    switch (c) {
      case '"':
        put(std::string_view("\\\""));
        break;
      case '\\':
        put(std::string_view("\\\\"));
        break;
      case '\n':
        put(std::string_view("\\n"));
        break;
      case '\r':
        put(std::string_view("\\r"));
        break;
      case '\t':
        put(std::string_view("\\t"));
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char code[8];
          std::snprintf(code, sizeof code, "\\u%04x", static_cast<unsigned>(c));
          put(std::string_view(code));
        } else {
          out.push_back(c);
        }
    }
  }
}

std::unique_ptr<spdlog::formatter> make_json_log_formatter() {
  auto formatter = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
  formatter->add_flag<escaped_message>('*').set_pattern(
      R"({"time":"%Y-%m-%dT%H:%M:%S.%eZ","level":"%l","thread":%t,"message":"%*"})");
  return formatter;
}

}  // namespace agw::gateway
