// Session variables end to end (docs/sessions.md, "Variables and metadata"): the mock
// echoes them when config.mock.echo_variables asks, exactly as the openai prompt
// carries them; metadata never reaches the agent.
#include <doctest/doctest.h>

#include "tests/support/gateway_process.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/session_fixtures.hpp"
#include "tests/support/sse_reader.hpp"

using namespace agw::test;

TEST_CASE("session variables: the agent sees variables, never metadata; PATCH replaces them") {
  gateway_process gw;
  const auto port = gw.port();
  const auto sid = fixtures::str(
      fixtures::create_session(port, R"({"config":{"mock":{"echo_variables":true}},"variables":{"name":"Ann","plan":"gold"},)"
                                     R"("metadata":{"crm_id":"secret-42"}})")
          .at("id"));
  auto run = runs::run_message(port, sid, "who am I?");
  auto done = run->parser.of_type("done");
  REQUIRE(done.size() == 1);
  const auto answer = fixtures::str(boost::json::parse(done[0]->data_text).at("assistant_data").at("content"));
  CHECK(answer == "Session variables: - name: Ann - plan: gold");
  CHECK(answer.find("secret-42") == std::string::npos);

  REQUIRE(http_call(port, "PATCH", "/sessions/" + sid, R"({"variables":{"name":"Bob"}})").status == 200);
  auto again = runs::run_message(port, sid, "and now?");
  const auto second =
      fixtures::str(boost::json::parse(again->parser.of_type("done").at(0)->data_text).at("assistant_data").at("content"));
  CHECK(second == "Session variables: - name: Bob");

  // Bad variables: a 400, nothing changed.
  fixtures::check_error(http_call(port, "PATCH", "/sessions/" + sid, R"({"variables":{"n":5}})"), 400, "bad_request");
  fixtures::check_error(http_call(port, "PATCH", "/sessions/" + sid, R"({"config":{"mock":{"echo_variables":"yes"}}})"), 400,
                        "bad_request");
  CHECK(fixtures::get_json(port, "/sessions/" + sid).at("variables") == boost::json::parse(R"({"name":"Bob"})"));
}
