#include "core/tools/calculator.hpp"

#include <string>

#include <doctest/doctest.h>
#include <boost/json/value.hpp>

namespace {

using agw::core::calculator;
using agw::core::tool_result;

tool_result run(const std::string& expression) { return calculator{}.invoke(boost::json::object{{"expression", expression}}); }

struct calc_case {
  const char* expression;
  const char* output;
  int exit_code;
};

// Design decision under test: exponent notation ("1e400", "1e5") is not part
// of the grammar, so it is a syntax error at the 'e' rather than an overflow.
// Overflow is still reachable through arithmetic or very long literals.
const calc_case cases[] = {
    // precedence and associativity
    {"2+3*4", "14", 0},
    {"(2+3)*4", "20", 0},
    {"10-4-3", "3", 0},
    {"100/10/5", "2", 0},
    {"2*3%4", "2", 0},
    {"7-2*3+1", "2", 0},
    {"8/2*4", "16", 0},
    // unary operators
    {"-(2+3)", "-5", 0},
    {"2*-3", "-6", 0},
    {"--2", "2", 0},
    {"-+-+2", "2", 0},
    {"+5", "5", 0},
    {"-3", "-3", 0},
    {"-2*3", "-6", 0},
    {"2 - -2", "4", 0},
    {"-0", "0", 0},
    // decimals and formatting
    {"1.5+1", "2.5", 0},
    {".5*2", "1", 0},
    {"2.", "2", 0},
    {"0.1", "0.1", 0},
    {"0.1+0.2", "0.30000000000000004", 0},
    {"10/3", "3.3333333333333335", 0},
    {"1/4", "0.25", 0},
    {"0.0000001", "1e-07", 0},
    {"10000000000*10000000000", "100000000000000000000", 0},
    {"100000000000*10000000000", "1e+21", 0},
    {"007", "7", 0},
    // modulo is fmod: sign follows the dividend
    {"7%3", "1", 0},
    {"-7%3", "-1", 0},
    {"7.5%2", "1.5", 0},
    // whitespace
    {"  1 +\t2 \n* 3 ", "7", 0},
    {"( ( 1 ) )", "1", 0},
    // math errors
    {"1/0", "division by zero", 1},
    {"1/(2-2)", "division by zero", 1},
    {"5%0", "modulo by zero", 1},
    {"5%0.0", "modulo by zero", 1},
    // syntax errors, positions are 0-based byte offsets
    {"(", "syntax error at position 1: unexpected end of expression", 1},
    {")", "syntax error at position 0: unexpected ')'", 1},
    {"2+3)", "syntax error at position 3: unexpected ')'", 1},
    {"(2+3", "syntax error at position 4: expected ')' before end of expression", 1},
    {"(2 3)", "syntax error at position 3: expected ')' but found '3'", 1},
    {"2+", "syntax error at position 2: unexpected end of expression", 1},
    {"2 3", "syntax error at position 2: unexpected '3'", 1},
    {"abc", "syntax error at position 0: unexpected 'a'", 1},
    {"2**3", "syntax error at position 2: unexpected '*'", 1},
    {".", "syntax error at position 0: unexpected '.'", 1},
    {"1.2.3", "syntax error at position 3: unexpected '.'", 1},
    {"1e400", "syntax error at position 1: unexpected 'e'", 1},
    {"1e5", "syntax error at position 1: unexpected 'e'", 1},
    {"2\xC3\x97"
     "3",
     "syntax error at position 1: unexpected byte 0xC3", 1},
    {"", "empty expression", 1},
    {"   \t\n", "empty expression", 1},
};

}  // namespace

TEST_CASE("calculator: expression table") {
  for (const auto& c : cases) {
    const std::string expression = c.expression;
    CAPTURE(expression);
    const auto result = run(expression);
    CHECK(result.output == std::string(c.output));
    CHECK(result.exit_code == c.exit_code);
  }
}

TEST_CASE("calculator: overflow is reported, not returned as inf") {
  const std::string big = "1" + std::string(200, '0');
  auto r = run(big + "*" + big);
  CHECK(r.exit_code == 1);
  CHECK(r.output == "result is not finite (overflow)");

  // A literal beyond double range is rejected at the literal.
  r = run("1" + std::string(400, '0'));
  CHECK(r.exit_code == 1);
  CHECK(r.output == "number too large at position 0");

  // ...but a literal that merely underflows is just zero.
  r = run("0." + std::string(400, '0') + "1");
  CHECK(r.exit_code == 0);
  CHECK(r.output == "0");
}

TEST_CASE("calculator: nesting limit") {
  const auto nested = [](int depth) {
    return std::string(static_cast<std::size_t>(depth), '(') + "1" + std::string(static_cast<std::size_t>(depth), ')');
  };
  auto r = run(nested(calculator::max_nesting_depth));
  CHECK(r.exit_code == 0);
  CHECK(r.output == "1");

  r = run(nested(calculator::max_nesting_depth + 1));
  CHECK(r.exit_code == 1);
  CHECK(r.output == "parentheses nested deeper than 100 levels at position 100");

  // 499 levels fits in the length limit, so this exercises the depth guard.
  r = run(nested(499));
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("nested deeper than 100") != std::string::npos);

  // 1000 levels is over the length limit; either way it must be an error, not a crash.
  r = run(nested(1000));
  CHECK(r.exit_code == 1);

  // Long runs of unary signs are iterative, never recursive.
  r = run(std::string(998, '-') + "2");
  CHECK(r.exit_code == 0);
  CHECK(r.output == "2");
}

TEST_CASE("calculator: length limit") {
  std::string ok = "1";
  while (ok.size() + 2 <= calculator::max_expression_length) ok += "+1";
  REQUIRE(ok.size() == 999);
  CHECK(run(ok).output == "500");

  const auto r = run(std::string(1001, '1'));
  CHECK(r.exit_code == 1);
  CHECK(r.output == "expression too long (1001 characters, max 1000)");
}

TEST_CASE("calculator: argument validation") {
  const calculator calc;
  auto r = calc.invoke({});
  CHECK(r.exit_code == 1);
  CHECK(r.output == "missing required argument 'expression'");

  r = calc.invoke({{"expression", 42}});
  CHECK(r.exit_code == 1);
  CHECK(r.output == "argument 'expression' must be a string");

  r = calc.invoke({{"expression", nullptr}});
  CHECK(r.exit_code == 1);
  CHECK(r.output == "argument 'expression' must be a string");
}

TEST_CASE("calculator: metadata") {
  const calculator calc;
  CHECK(calc.name() == "calculator");
  CHECK_FALSE(calc.description().empty());
  const auto schema = calc.parameters_schema();
  CHECK(schema.at("type") == "object");
  CHECK(schema.at("properties").at("expression").at("type") == "string");
  CHECK(schema.at("required").as_array().at(0) == "expression");
}
