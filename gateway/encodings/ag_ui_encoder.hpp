#pragma once
// A run's session events as AG-UI events (https://docs.ag-ui.com, @ag-ui/core 1.0):
// one `id: <session event id>` line and one `data: <json>` line per AG-UI event, LF
// only. One session event may open or close AG-UI spans around its own event (a
// token opens TEXT_MESSAGE_START before its TEXT_MESSAGE_CONTENT; a tool call closes
// the text message), so the order always passes the AG-UI client's verifyEvents:
// RUN_STARTED first, nothing open at RUN_FINISHED, nothing after RUN_ERROR.
//
// Pure: the bytes depend only on the frames given, in order, and the ids the object
// was made with (message ids are derived from the run id), so a replay of the same
// run encodes to the same bytes. Not thread-safe: one per stream, on its executor.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <boost/json/object.hpp>

#include "gateway/encodings/frame_encoder.hpp"

namespace agw::gateway {

class ag_ui_encoder final : public frame_encoder {
 public:
  // `thread_id`, `client_run_id`: what RUN_STARTED/RUN_FINISHED name (the session id and
  // the RunAgentInput's runId). `run_id`: the gateway's run, whose events are encoded
  // (other runs' events are skipped).
  ag_ui_encoder(std::string thread_id, std::string client_run_id, std::string run_id);

  void encode(const core::event_frame& frame, std::string& out) override;

  bool finished() const { return finished_; }

 private:
  struct sink;  // the frame being encoded: its id, and where its events go
  void start_run(sink& to);
  void on_token(sink& to, std::string_view delta);
  void on_reasoning(sink& to, std::string_view delta);
  void on_tool_call(sink& to, const boost::json::object& data);
  void on_tool_result(sink& to, const boost::json::object& data);
  void on_planning(sink& to, const boost::json::object& data);
  void on_step_complete(sink& to, const boost::json::object& data);
  void on_usage(const boost::json::object& data);
  void on_error(sink& to, const boost::json::object& data);
  void on_done(sink& to, const boost::json::object& data);
  void close_text(sink& to);
  void close_reasoning(sink& to);
  void close_step(sink& to);
  void close_all(sink& to);
  std::string next_message_id(std::string_view kind);

  std::string thread_id_;
  std::string client_run_id_;
  std::string run_id_;
  bool started_ = false;
  bool finished_ = false;       // RUN_FINISHED or RUN_ERROR sent: nothing more
  std::string text_id_;         // the open text message, if any
  std::string reasoning_id_;    // the open reasoning span and message, if any
  std::string tool_parent_id_;  // the assistant message the run's next tool calls belong to
  std::vector<std::string> plan_;
  std::optional<std::string> open_step_;
  std::optional<boost::json::object> usage_;
  std::optional<std::string> error_code_, error_message_;
  int messages_ = 0;
};

}  // namespace agw::gateway
