#pragma once
// A session's `variables` as the agent sees them: one block of text appended to the
// system prompt of the openai provider, and what the mock echoes with
// config.mock.echo_variables. metadata never goes here (docs/sessions.md). Pure.
#include <string>

#include "core/session.hpp"

namespace agw::core {

// "" when there are none; else a header line and one "- key: value" line per variable,
// in key order (a stable prompt: the same variables give the same bytes).
std::string variables_prompt(const string_map& variables);

// The system prompt with the variables' block after it (a blank line between).
std::string with_variables(const std::string& system_prompt, const string_map& variables);

}  // namespace agw::core
