#include "tests/bench/run_response.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>

namespace agw::bench {
namespace {

constexpr std::size_t max_head_bytes = 16 * 1024;

}  // namespace

response_parser::response_parser(stream_result& result) : result_(result) {
  head_.reserve(1024);
  line_.reserve(1024);
}

void response_parser::feed(const char* p, std::size_t n, clock_type::time_point now) {
  const char* end = p + n;
  while (p < end && phase_ != phase::complete) {
    switch (phase_) {
      case phase::head:
        p = take_head(p, end);
        break;
      case phase::size_line:
      case phase::trailer:
        p = take_chunk_line(p, end);
        break;
      case phase::data: {
        const auto take = static_cast<std::size_t>(std::min<std::uint64_t>(chunk_left_, static_cast<std::uint64_t>(end - p)));
        sse(p, take, now);
        p += take;
        chunk_left_ -= take;
        if (chunk_left_ == 0) {
          phase_ = phase::data_crlf;
          crlf_seen_ = 0;
        }
        break;
      }
      case phase::data_crlf: {
        const char c = *p++;
        if (c == '\r' && crlf_seen_ == 0) {
          crlf_seen_ = 1;
        } else if (c == '\n') {
          phase_ = phase::size_line;
        } else {
          stop("chunk data not followed by CRLF");
        }
        break;
      }
      case phase::identity:
        sse(p, static_cast<std::size_t>(end - p), now);
        p = end;
        break;
      case phase::complete:
        break;
    }
  }
}

const char* response_parser::take_head(const char* p, const char* end) {
  const std::size_t old = head_.size();
  head_.append(p, static_cast<std::size_t>(end - p));
  const auto at = head_.find("\r\n\r\n", old >= 3 ? old - 3 : 0);
  if (at == std::string::npos) {
    if (head_.size() > max_head_bytes) stop("response head larger than 16 KiB");
    return end;
  }
  head_.resize(at + 4);
  parse_head();
  head_.clear();
  return p + (at + 4 - old);
}

const char* response_parser::take_chunk_line(const char* p, const char* end) {
  const auto* nl = static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(end - p)));
  if (!nl) {
    head_.append(p, static_cast<std::size_t>(end - p));
    if (head_.size() > 1024) stop("chunk-size line too long");
    return end;
  }
  head_.append(p, static_cast<std::size_t>(nl - p));
  std::string_view l = head_;
  if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
  if (phase_ == phase::trailer) {
    if (l.empty()) phase_ = phase::complete;  // the blank line after the last chunk
  } else {
    chunk_size(l);
  }
  head_.clear();
  return nl + 1;
}

void response_parser::stop(std::string why) {
  result_.fail(std::move(why));
  phase_ = phase::complete;
}

void response_parser::parse_head() {
  std::string_view h = head_;
  const auto line_end = h.find("\r\n");
  const auto status_line = h.substr(0, line_end);
  int status = 0;
  if (const auto sp = status_line.find(' '); status_line.starts_with("HTTP/1.") && sp != std::string_view::npos)
    std::from_chars(status_line.data() + sp + 1, status_line.data() + status_line.size(), status);
  if (status != 200) {
    stop(std::string(status_line));
    return;
  }
  std::string lower(h);
  for (auto& c : lower) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  auto header_value = [&lower](std::string_view name) -> std::string_view {
    const auto at = lower.find(name);
    if (at == std::string::npos) return {};
    std::string_view v(lower);
    v = v.substr(at + name.size());
    return v.substr(0, v.find("\r\n"));
  };
  if (header_value("\r\ncontent-type:").find("text/event-stream") == std::string_view::npos) {
    stop("200 without Content-Type: text/event-stream");
    return;
  }
  phase_ = header_value("\r\ntransfer-encoding:").find("chunked") != std::string_view::npos ? phase::size_line : phase::identity;
}

void response_parser::chunk_size(std::string_view l) {
  l = l.substr(0, l.find(';'));  // chunk extensions are ignored
  while (!l.empty() && (l.back() == ' ' || l.back() == '\t')) l.remove_suffix(1);
  std::uint64_t size = 0;
  auto [ptr, ec] = std::from_chars(l.data(), l.data() + l.size(), size, 16);
  if (l.empty() || ec != std::errc() || ptr != l.data() + l.size()) {
    stop("bad chunk-size line");
    return;
  }
  if (size == 0) {
    phase_ = phase::trailer;
  } else {
    chunk_left_ = size;
    phase_ = phase::data;
  }
}

void response_parser::sse(const char* p, std::size_t n, clock_type::time_point now) {
  const char* end = p + n;
  while (p < end) {
    const auto* nl = static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(end - p)));
    if (!nl) {
      line_.append(p, static_cast<std::size_t>(end - p));
      return;
    }
    if (line_.empty()) {
      sse_line(std::string_view(p, static_cast<std::size_t>(nl - p)), now);
    } else {
      line_.append(p, static_cast<std::size_t>(nl - p));
      sse_line(line_, now);
      line_.clear();
    }
    p = nl + 1;
  }
}

void response_parser::sse_line(std::string_view l, clock_type::time_point now) {
  if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
  if (l.empty()) {
    dispatch(now);
    return;
  }
  if (l.front() == ':') return;  // a comment: ": heartbeat"
  const auto colon = l.find(':');
  const auto field = l.substr(0, colon);
  auto value = colon == std::string_view::npos ? std::string_view{} : l.substr(colon + 1);
  if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (field == "data") {
    frame_open_ = true;
    if (kind_ == event_kind::error && error_data_.empty()) error_data_.assign(value.substr(0, 200));
  } else if (field == "event") {
    frame_open_ = true;
    kind_ = value == "token"   ? event_kind::token
            : value == "done"  ? event_kind::done
            : value == "error" ? event_kind::error
                               : event_kind::other;
  } else if (field == "id") {
    auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), frame_id_);
    if (value.empty() || ec != std::errc() || ptr != value.data() + value.size())
      result_.fail("id '" + std::string(value.substr(0, 40)) + "' is not an integer");
    else
      frame_has_id_ = true;
  }
  // retry: and unknown fields are ignored, as a browser does.
}

void response_parser::dispatch(clock_type::time_point now) {
  if (frame_open_) {
    result_.events++;
    if (result_.done) result_.fail("an event after done");
    if (!frame_has_id_) {
      result_.fail("an event without id");
    } else {
      if (last_id_ >= 0 && frame_id_ != last_id_ + 1)
        result_.fail("id " + std::to_string(frame_id_) + " after " + std::to_string(last_id_));
      last_id_ = frame_id_;
    }
    switch (kind_) {
      case event_kind::token:
        if (result_.tokens.empty()) result_.first_token = now;
        result_.tokens.push_back(now);
        break;
      case event_kind::done:
        result_.done = true;
        result_.done_at = now;
        break;
      case event_kind::error:
        result_.fail("error event: " + error_data_);
        break;
      case event_kind::other:
        break;
    }
  }
  frame_open_ = false;
  frame_has_id_ = false;
  kind_ = event_kind::other;
}

}  // namespace agw::bench
