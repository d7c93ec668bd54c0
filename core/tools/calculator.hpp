#pragma once

#include <string_view>

#include <boost/json/object.hpp>

#include "core/tools/tool.hpp"

namespace agw::core {

// Tool "calculator": evaluates an arithmetic expression such as "2+3*4".
// Supports + - * / % (fmod), parentheses, unary +/-, decimal literals
// ("1.5", ".5", "2."), whitespace. Exponent notation ("1e5") is deliberately
// NOT supported and is a syntax error: it keeps the grammar small and the
// model can always write the multiplication out.
// Thread-safety: stateless; invoke() may be called concurrently.
class calculator final : public tool {
 public:
  static constexpr std::size_t max_expression_length = 1000;
  static constexpr int max_nesting_depth = 100;

  std::string_view name() const override;
  std::string_view description() const override;
  boost::json::object parameters_schema() const override;
  tool_result invoke(const boost::json::object& args) const override;
};

}  // namespace agw::core
