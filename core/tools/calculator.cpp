#include "core/tools/calculator.hpp"

#include <charconv>
#include <cmath>
#include <cstddef>
#include <optional>
#include <string>
#include <system_error>

#include <boost/json/array.hpp>
#include <boost/json/string.hpp>

namespace agw::core {
namespace {

// Grammar (recursive descent, one function per precedence level):
//   expression := term (('+' | '-') term)*
//   term       := unary (('*' | '/' | '%') unary)*
//   unary      := ('+' | '-')* primary
//   primary    := number | '(' expression ')'
//   number     := digits ['.' digits?] | '.' digits
// Unary signs are consumed in a loop rather than by recursion, and only '('
// recurses, so stack depth is bounded by max_nesting_depth.
//
// Errors do not throw: the first one is recorded in error_, every parse
// function then returns early, and evaluate() reports it.
class parser {
 public:
  explicit parser(std::string_view input) : input_(input) {}

  // Returns the value, or nullopt with error() describing the failure.
  std::optional<double> evaluate() {
    skip_whitespace();
    if (at_end()) return fail("empty expression");
    const double value = parse_expression();
    if (error_) return std::nullopt;
    skip_whitespace();
    if (!at_end()) return fail(unexpected_here());
    return value;
  }

  const std::string& error() const { return *error_; }

 private:
  double parse_expression() {
    double lhs = parse_term();
    while (!error_) {
      skip_whitespace();
      if (at_end()) break;
      const char op = input_[pos_];
      if (op != '+' && op != '-') break;
      ++pos_;
      const double rhs = parse_term();
      if (error_) break;
      lhs = checked(op == '+' ? lhs + rhs : lhs - rhs);
    }
    return lhs;
  }

  double parse_term() {
    double lhs = parse_unary();
    while (!error_) {
      skip_whitespace();
      if (at_end()) break;
      const char op = input_[pos_];
      if (op != '*' && op != '/' && op != '%') break;
      ++pos_;
      const double rhs = parse_unary();
      if (error_) break;
      if (op == '*') {
        lhs = checked(lhs * rhs);
      } else if (rhs == 0.0) {
        fail(op == '/' ? "division by zero" : "modulo by zero");
      } else {
        lhs = checked(op == '/' ? lhs / rhs : std::fmod(lhs, rhs));
      }
    }
    return lhs;
  }

  double parse_unary() {
    bool negate = false;
    for (;;) {
      skip_whitespace();
      if (at_end()) break;
      if (input_[pos_] == '-') {
        negate = !negate;
      } else if (input_[pos_] != '+') {
        break;
      }
      ++pos_;
    }
    const double value = parse_primary();
    return negate ? -value : value;
  }

  double parse_primary() {
    skip_whitespace();
    if (at_end()) return fail_value(unexpected_here());
    const char c = input_[pos_];
    if (c == '(') {
      if (++depth_ > calculator::max_nesting_depth) {
        return fail_value("parentheses nested deeper than " + std::to_string(calculator::max_nesting_depth) +
                          " levels at position " + std::to_string(pos_));
      }
      ++pos_;
      const double value = parse_expression();
      if (error_) return 0.0;
      skip_whitespace();
      if (at_end() || input_[pos_] != ')') {
        return fail_value("syntax error at position " + std::to_string(pos_) + ": expected ')'" +
                          (at_end() ? " before end of expression" : " but found " + describe(input_[pos_])));
      }
      ++pos_;
      --depth_;
      return value;
    }
    if (is_digit(c) || c == '.') return parse_number();
    return fail_value(unexpected_here());
  }

  double parse_number() {
    const std::size_t start = pos_;
    bool int_nonzero = false;
    std::size_t digits = 0;
    while (!at_end() && is_digit(input_[pos_])) {
      int_nonzero = int_nonzero || input_[pos_] != '0';
      ++digits;
      ++pos_;
    }
    if (!at_end() && input_[pos_] == '.') {
      ++pos_;
      while (!at_end() && is_digit(input_[pos_])) {
        ++digits;
        ++pos_;
      }
    }
    if (digits == 0) {  // a lone '.'
      pos_ = start;
      return fail_value(unexpected_here());
    }
    double value = 0.0;
    const char* first = input_.data() + start;
    const char* last = input_.data() + pos_;
    const auto [ptr, ec] = std::from_chars(first, last, value, std::chars_format::fixed);
    if (ec == std::errc::result_out_of_range) {
      // from_chars reports both overflow and underflow this way; a literal
      // with an all-zero integer part can only have underflowed, which is 0.
      if (!int_nonzero) return 0.0;
      return fail_value("number too large at position " + std::to_string(start));
    }
    if (ec != std::errc{} || ptr != last) {  // unreachable given the scan above; defensive
      return fail_value("syntax error at position " + std::to_string(start) + ": invalid number");
    }
    return value;
  }

  // Inputs are always finite, so checking after every operation catches
  // overflow at its source (and prevents inf - inf from turning into nan).
  double checked(double value) {
    if (!std::isfinite(value)) fail("result is not finite (overflow)");
    return value;
  }

  std::string unexpected_here() const {
    return "syntax error at position " + std::to_string(pos_) + ": " +
           (at_end() ? std::string("unexpected end of expression") : "unexpected " + describe(input_[pos_]));
  }

  // Only printable ASCII is echoed back, so the message is always valid UTF-8.
  static std::string describe(char c) {
    const auto u = static_cast<unsigned char>(c);
    if (u > 0x20 && u < 0x7f) return std::string("'") + c + "'";
    static constexpr char hex[] = "0123456789ABCDEF";
    return std::string("byte 0x") + hex[u >> 4] + hex[u & 0xf];
  }

  static bool is_digit(char c) { return c >= '0' && c <= '9'; }

  bool at_end() const { return pos_ >= input_.size(); }

  void skip_whitespace() {
    while (!at_end() && (input_[pos_] == ' ' || input_[pos_] == '\t' || input_[pos_] == '\n' || input_[pos_] == '\r')) {
      ++pos_;
    }
  }

  std::nullopt_t fail(std::string message) {
    if (!error_) error_ = std::move(message);  // keep the first (root-cause) error
    return std::nullopt;
  }

  double fail_value(std::string message) {
    fail(std::move(message));
    return 0.0;
  }

  std::string_view input_;
  std::size_t pos_ = 0;
  int depth_ = 0;
  std::optional<std::string> error_;
};

// Integers print without a decimal point ("14"); other values print in the
// shortest form that round-trips. Fixed notation is used for magnitudes in
// [1e-6, 1e21) and scientific outside it (same cut-offs as JavaScript's
// Number#toString), so typical answers never look like "1e-04" or "1e+20".
std::string format_number(double value) {
  if (value == 0.0) return "0";  // also folds -0 into "0"
  const double magnitude = std::fabs(value);
  const auto format = magnitude >= 1e-6 && magnitude < 1e21 ? std::chars_format::fixed : std::chars_format::scientific;
  char buffer[64];  // shortest fixed output below 1e21 is at most ~30 chars
  const auto [ptr, ec] = std::to_chars(buffer, buffer + sizeof buffer, value, format);
  if (ec != std::errc{}) {  // cannot happen with this buffer size; stay safe anyway
    const auto fallback = std::to_chars(buffer, buffer + sizeof buffer, value);
    return std::string(buffer, fallback.ptr);
  }
  return std::string(buffer, ptr);
}

tool_result error_result(std::string message) { return {std::move(message), 1}; }

}  // namespace

std::string_view calculator::name() const { return "calculator"; }

std::string_view calculator::description() const {
  return "Evaluates an arithmetic expression exactly as written and returns the number. Supports "
         "+ - * / % (floating-point remainder), parentheses, unary minus, and decimal numbers "
         "such as 1.5. No variables, functions or exponent notation.";
}

boost::json::object calculator::parameters_schema() const {
  return boost::json::object{
      {"type", "object"},
      {"properties",
       {{"expression",
         {{"type", "string"},
          {"description", "Arithmetic expression, e.g. \"(2 + 3) * 4.5 % 7\""},
          {"maxLength", max_expression_length}}}}},
      {"required", boost::json::array{"expression"}},
      {"additionalProperties", false},
  };
}

tool_result calculator::invoke(const boost::json::object& args) const {
  const auto* value = args.if_contains("expression");
  if (value == nullptr) return error_result("missing required argument 'expression'");
  const auto* expression = value->if_string();
  if (expression == nullptr) return error_result("argument 'expression' must be a string");
  if (expression->size() > max_expression_length) {
    return error_result("expression too long (" + std::to_string(expression->size()) + " characters, max " +
                        std::to_string(max_expression_length) + ")");
  }
  parser p(std::string_view(expression->data(), expression->size()));
  const auto result = p.evaluate();
  if (!result) return error_result(p.error());
  return {format_number(*result), 0};
}

}  // namespace agw::core
