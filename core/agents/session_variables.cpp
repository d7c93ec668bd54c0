#include "core/agents/session_variables.hpp"

namespace agw::core {

std::string variables_prompt(const string_map& variables) {
  if (variables.empty()) return {};
  std::string out = "Session variables:";
  for (const auto& [k, v] : variables) out += "\n- " + k + ": " + v;
  return out;
}

std::string with_variables(const std::string& system_prompt, const string_map& variables) {
  auto block = variables_prompt(variables);
  if (block.empty()) return system_prompt;
  if (system_prompt.empty()) return block;
  return system_prompt + "\n\n" + block;
}

}  // namespace agw::core
