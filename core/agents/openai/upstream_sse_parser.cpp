#include "core/agents/openai/upstream_sse_parser.hpp"

namespace agw::core::openai {

bool upstream_sse_parser::feed(std::string_view bytes, std::vector<sse_message>& out) {
  if (failed_) return false;
  std::size_t i = 0;
  // An LF right after a CR that ended the previous piece belongs to that line end.
  if (after_cr_ && !bytes.empty() && bytes.front() == '\n') ++i;
  after_cr_ = false;
  while (i < bytes.size()) {
    const auto end = bytes.find_first_of("\r\n", i);
    if (end == std::string_view::npos) {
      line_.append(bytes.substr(i));
      break;
    }
    line_.append(bytes.substr(i, end - i));
    if (line_.size() > max_line_) break;
    take_line(line_, out);
    line_.clear();
    i = end + 1;
    if (bytes[end] == '\r') {
      if (i == bytes.size())
        after_cr_ = true;
      else if (bytes[i] == '\n')
        ++i;
    }
  }
  if (line_.size() > max_line_) failed_ = true;
  return !failed_;
}

void upstream_sse_parser::finish(std::vector<sse_message>& out) {
  if (failed_) return;
  if (!line_.empty()) take_line(line_, out);
  line_.clear();
  dispatch(out);
}

void upstream_sse_parser::take_line(std::string_view line, std::vector<sse_message>& out) {
  if (line.empty()) return dispatch(out);
  if (line.front() == ':') return;  // a comment: ": keep-alive", ": OPENROUTER PROCESSING"
  const auto colon = line.find(':');
  const auto field = line.substr(0, colon);
  std::string_view value;
  if (colon != std::string_view::npos) {
    value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  if (field == "data") {
    if (has_data_) pending_.data += '\n';
    pending_.data.append(value);
    has_data_ = true;
  } else if (field == "event") {
    pending_.event = std::string(value);
  }
  // id, retry and unknown fields mean nothing for a model stream.
}

void upstream_sse_parser::dispatch(std::vector<sse_message>& out) {
  if (has_data_) out.push_back(std::move(pending_));
  pending_ = {};
  has_data_ = false;
}

}  // namespace agw::core::openai
