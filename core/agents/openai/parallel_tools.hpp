#pragma once
// Runs the tool calls of one model answer at the same time (each with the tool
// time limit, on the tool runner's workers, never on an io thread) and records
// the step as run_context::call_tools does: the assistant turn that asked, a
// tool_call event per call, then a tool_result event and a tool message per
// result in call order, then a checkpoint. Runs on the session's strand.
#include <boost/asio/awaitable.hpp>
#include <vector>

#include "core/runs/run_context.hpp"
#include "core/tools/tool_runner.hpp"

namespace agw::core::openai {

// The outcomes of `calls`, in call order, all run at once; completes on the caller's executor.
boost::asio::awaitable<std::vector<tool_outcome>> run_concurrently(tool_runner& runner,
                                                                   const std::vector<run_context::tool_request>& calls);

// `runner` outlives the call (the agent environment owns it).
boost::asio::awaitable<std::vector<tool_outcome>> run_tools_in_parallel(run_context& ctx, tool_runner& runner,
                                                                        const std::vector<run_context::tool_request>& calls);

}  // namespace agw::core::openai
