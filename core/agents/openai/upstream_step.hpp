#pragma once
// One model turn: POST the conversation to the upstream, stream its answer
// into the run (tokens and reasoning the moment they arrive), and hand back the
// tool calls it assembled and the usage it reported. Failures end the run
// through ctx.fail() with the contract's upstream_* codes; an abort closes the
// upstream connection at once. Retries (with backoff, honouring Retry-After)
// happen only while opening, before any byte of this turn was streamed.
// Runs on the session's strand.
#include <boost/asio/awaitable.hpp>
#include <optional>
#include <vector>

#include "core/agents/openai/run_plan.hpp"
#include "core/agents/openai/tool_call_assembler.hpp"
#include "core/http/streaming_http_client.hpp"
#include "core/runs/run_context.hpp"

namespace agw::core::openai {

struct step_result {
  bool finished = false;  // false: the run failed (ctx.failure()) or was aborted
  std::vector<assembled_call> calls;
  std::optional<usage_counts> usage;
};

boost::asio::awaitable<step_result> stream_step(run_context& ctx, const run_plan& plan, streaming_http_client& http);

}  // namespace agw::core::openai
