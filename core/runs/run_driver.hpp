#pragma once
// Drives one run from its first event to its done: runs the agent, then
// publishes how it ended, persists the final assistant message in the
// checkpoint (and its projection), and publishes done with that message.
#include <boost/asio/awaitable.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/agents/agent.hpp"
#include "core/checkpoint.hpp"
#include "core/metrics.hpp"
#include "core/runs/run.hpp"
#include "core/runs/session_channel.hpp"
#include "core/tools/client_tool.hpp"
#include "core/tools/tool_runner.hpp"

namespace agw::core {

struct run_request {
  session_record session;
  conversation_state conversation;  // as checkpointed at run start, ending with the user message
  std::int64_t checkpoint_version = 0;
  std::optional<std::string> callback_url;  // the run's end goes to the webhook outbox in its final checkpoint
  std::function<void()> outbox_written;     // called (any thread) once that delivery row is committed
  // Given the conversation as its final checkpoint stored it (and that version) once
  // it committed, for the session's next run to start from; not called otherwise.
  std::function<void(conversation_state, std::int64_t)> conversation_saved = nullptr;
  std::string request_id{};                 // the request that started the run, named in its log line
  std::vector<client_tool> client_tools{};  // tools the run's client declared (AG-UI), offered beside the built-in ones
  // The queued messages this run answers (multitask enqueue): announced by a `dequeued`
  // status before the agent starts; taken_up_to is the newest queue seq among them.
  std::vector<std::string> dequeued{};
  std::int64_t taken_up_to = 0;
};

// Runs on the channel's strand; never throws (failures end the run with status error).
boost::asio::awaitable<void> drive_run(std::shared_ptr<session_channel> channel, std::shared_ptr<run> r, run_request request,
                                       std::shared_ptr<agent> agent_impl, tool_runner& tools, metrics& stats);

}  // namespace agw::core
