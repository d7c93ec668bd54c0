#include "core/tools/current_time.hpp"

#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace agw::core {
namespace {

// A parsed utc_offset. minutes is signed; zulu selects the "Z" spelling.
struct utc_offset {
  std::chrono::minutes minutes{0};
  bool zulu = true;
};

constexpr int max_offset_minutes = 14 * 60;  // real-world offsets span -12:00..+14:00

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Accepts "Z"/"z" or exactly "+HH:MM"/"-HH:MM" with MM in 00..59 and the
// total within +-14:00. Returns nullopt for anything else.
std::optional<utc_offset> parse_offset(std::string_view text) {
  if (text == "Z" || text == "z") return utc_offset{};
  if (text.size() != 6 || (text[0] != '+' && text[0] != '-') || !is_digit(text[1]) || !is_digit(text[2]) || text[3] != ':' ||
      !is_digit(text[4]) || !is_digit(text[5])) {
    return std::nullopt;
  }
  const int hours = (text[1] - '0') * 10 + (text[2] - '0');
  const int minutes = (text[4] - '0') * 10 + (text[5] - '0');
  if (minutes > 59) return std::nullopt;
  const int total = hours * 60 + minutes;
  if (total > max_offset_minutes) return std::nullopt;
  return utc_offset{std::chrono::minutes(text[0] == '-' ? -total : total), false};
}

// RFC 3339 "YYYY-MM-DDTHH:MM:SS.mmm" followed by "Z" or "+HH:MM".
// "-00:00" is normalised to "+00:00": RFC 3339 gives "-00:00" the special
// meaning "offset unknown", which is never true here.
std::string format_rfc3339(std::chrono::system_clock::time_point now, const utc_offset& offset) {
  using namespace std::chrono;
  const auto local = time_point_cast<milliseconds>(now) + offset.minutes;
  // floor (not duration_cast) so instants before 1970 land on the right day.
  const auto day = floor<days>(local);
  const year_month_day ymd{day};
  const hh_mm_ss<milliseconds> tod{local - day};

  char buffer[64];
  int len = std::snprintf(buffer, sizeof buffer, "%04d-%02u-%02uT%02d:%02d:%02d.%03d", static_cast<int>(ymd.year()),
                          static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                          static_cast<int>(tod.hours().count()), static_cast<int>(tod.minutes().count()),
                          static_cast<int>(tod.seconds().count()), static_cast<int>(tod.subseconds().count()));
  std::string out(buffer, len > 0 ? static_cast<std::size_t>(len) : 0);
  if (offset.zulu) {
    out += 'Z';
  } else {
    const auto total = offset.minutes.count();
    const auto magnitude = total < 0 ? -total : total;
    len = std::snprintf(buffer, sizeof buffer, "%c%02d:%02d", total < 0 ? '-' : '+', static_cast<int>(magnitude / 60),
                        static_cast<int>(magnitude % 60));
    out.append(buffer, len > 0 ? static_cast<std::size_t>(len) : 0);
  }
  return out;
}

}  // namespace

current_time::current_time(clock_fn now) : now_(now ? std::move(now) : clock_fn(std::chrono::system_clock::now)) {}

std::string_view current_time::name() const { return "current_time"; }

std::string_view current_time::description() const {
  return "Returns the current date and time in RFC 3339 format with milliseconds, in UTC by "
         "default or at the given fixed UTC offset.";
}

boost::json::object current_time::parameters_schema() const {
  return boost::json::object{
      {"type", "object"},
      {"properties",
       {{"utc_offset",
         {{"type", "string"},
          {"description",
           "Optional UTC offset as \"+HH:MM\" or \"-HH:MM\" (between -14:00 and +14:00), or "
           "\"Z\" for UTC. Defaults to UTC."},
          {"pattern", "^(Z|[+-][0-9]{2}:[0-9]{2})$"}}}}},
      {"additionalProperties", false},
  };
}

tool_result current_time::invoke(const boost::json::object& args) const {
  utc_offset offset;
  // Models often send explicit nulls for optional parameters; treat as absent.
  if (const auto* value = args.if_contains("utc_offset"); value != nullptr && !value->is_null()) {
    const auto* text = value->if_string();
    if (text == nullptr) return {"argument 'utc_offset' must be a string like \"+02:00\"", 1};
    const auto parsed = parse_offset(std::string_view(text->data(), text->size()));
    if (!parsed) {
      return {
          "invalid utc_offset: expected \"Z\" or \"+HH:MM\"/\"-HH:MM\" between -14:00 and "
          "+14:00",
          1};
    }
    offset = *parsed;
  }
  return {format_rfc3339(now_(), offset), 0};
}

}  // namespace agw::core
