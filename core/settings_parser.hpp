#pragma once
// Builds settings from command-line flags and GATEWAY_* environment variables
// (a flag wins). Pure functions: no I/O, no globals, so tests can feed both.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/settings.hpp"

namespace agw::core {

enum class command { serve, rebuild, help, version };

struct command_line {
  command cmd = command::serve;
  settings config;
  std::optional<std::string> rebuild_session;  // `rebuild --session ID`
  bool rebuild_all = false;                    // `rebuild --all`
};

struct parse_result {
  std::optional<command_line> value;
  std::string error;  // set when value is empty
};

// env_lookup returns the variable's value or nullopt; main passes getenv.
using env_lookup = std::function<std::optional<std::string>(const std::string&)>;

parse_result parse_command_line(const std::vector<std::string>& args, const env_lookup& env);

// The --help text: every flag with its variable, default and meaning.
std::string usage_text();

}  // namespace agw::core
