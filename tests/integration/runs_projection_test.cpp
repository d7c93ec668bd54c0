// The messages projection is rebuilt from the checkpoint: POST /rebuild, the
// offline `rebuild` command and the start-up repair all restore exactly what
// GET /messages showed (ids, timestamps, content, order).
#include <doctest/doctest.h>

#include "tests/support/gateway_process.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/sse_reader.hpp"

using namespace agw::test;
using namespace agw::test::runs;

namespace {

const std::string unknown_session = "00000000-0000-4000-8000-000000000000";

// Breaks the session's projection: drops the tool row, rewrites the user rows.
std::string corruption(const std::string& sid) {
  return "DELETE FROM messages WHERE session_id = '" + sid +
         "' AND role = 'tool';\n"
         "UPDATE messages SET content = 'x', created_at = 0 WHERE session_id = '" +
         sid + "' AND role = 'user';\n";
}

std::string projection_dump(const std::string& db, const std::string& sid) {
  auto [status, out] = sqlite3_exec(db,
                                    "SELECT seq, id, role, content, tool_calls, tool_call_id, token_count, model_used, "
                                    "parent_id, status, created_at FROM messages WHERE session_id = '" +
                                        sid + "' ORDER BY seq;");
  REQUIRE(status == 0);
  return out;
}

// Two runs, one of them with a tool call: 6 messages.
std::string make_conversation(std::uint16_t port) {
  const std::string sid = create_mock_session(port, R"({"tool_calls":[{"name":"calculator","args":{"expression":"2+3*4"}}]})");
  run_message(port, sid, "first question");
  auto patched = http_call(port, "PATCH", "/sessions/" + sid, R"({"config":{}})");
  REQUIRE(patched.status == 200);
  run_message(port, sid, "second question");
  return sid;
}

}  // namespace

TEST_CASE("runs: POST /rebuild restores the projection exactly") {
  if (!sqlite3_available()) {
    MESSAGE("sqlite3 CLI not found: skipped");
    return;
  }
  gateway_process gw;
  const std::string sid = make_conversation(gw.port());
  const auto original = get_messages(gw.port(), sid);
  REQUIRE(original.size() == 6);

  auto [status, out] = sqlite3_exec(gw.db_path(), corruption(sid));
  INFO("sqlite3: " << out);
  REQUIRE(status == 0);
  const auto drifted = get_messages(gw.port(), sid);
  REQUIRE(drifted != original);  // the corruption took effect
  CHECK(drifted.size() == 5);

  auto rebuilt = http_call(gw.port(), "POST", "/sessions/" + sid + "/rebuild", "", {});
  INFO("rebuild: " << rebuilt.body);
  REQUIRE(rebuilt.status == 200);
  CHECK(rebuilt.json() == boost::json::parse(R"({"messages":6})"));
  CHECK(get_messages(gw.port(), sid) == original);
  CHECK(get_session(gw.port(), sid).at("message_count") == 6);

  // Rebuilding an intact projection changes nothing.
  auto again = http_call(gw.port(), "POST", "/sessions/" + sid + "/rebuild", "", {});
  CHECK(again.json() == boost::json::parse(R"({"messages":6})"));
  CHECK(get_messages(gw.port(), sid) == original);

  // A session without messages rebuilds to none.
  const std::string empty = create_session(gw.port());
  auto none = http_call(gw.port(), "POST", "/sessions/" + empty + "/rebuild", "", {});
  CHECK(none.status == 200);
  CHECK(none.json() == boost::json::parse(R"({"messages":0})"));

  check_error(http_call(gw.port(), "POST", "/sessions/" + unknown_session + "/rebuild", "", {}), 404, "not_found");
  check_error(http_call(gw.port(), "POST", "/sessions/not-a-uuid/rebuild", "", {}), 404, "not_found");

  // The session goes on after a rebuild with its ids and messages.
  auto next = run_message(gw.port(), sid, "third question");
  check_run_stream(*next, next->head.header("X-Run-Id"));
  auto all = get_messages(gw.port(), sid);
  REQUIRE(all.size() == 8);
  CHECK(boost::json::array(all.begin() + 2, all.end()) == original);
}

TEST_CASE("runs: the offline rebuild command and the start-up repair restore the projection") {
  if (!sqlite3_available()) {
    MESSAGE("sqlite3 CLI not found: skipped");
    return;
  }
  gateway_process gw;
  const std::string sid = make_conversation(gw.port());
  const auto original = get_messages(gw.port(), sid);
  REQUIRE(original.size() == 6);
  REQUIRE(gw.terminate() == 0);
  const std::string rows = projection_dump(gw.db_path(), sid);
  REQUIRE(!rows.empty());

  SUBCASE("offline rebuild --session") {
    REQUIRE(sqlite3_exec(gw.db_path(), corruption(sid)).first == 0);
    REQUIRE(projection_dump(gw.db_path(), sid) != rows);
    auto [status, out, timed_out] = run_gateway_command({"rebuild", "--session", sid}, {{"GATEWAY_DB_PATH", gw.db_path()}});
    INFO("rebuild output: " << out);
    CHECK(status == 0);
    CHECK(projection_dump(gw.db_path(), sid) == rows);  // fixed by the command itself, before any start-up

    auto [bad_status, bad_out, bad_timed_out] =
        run_gateway_command({"rebuild", "--session", unknown_session}, {{"GATEWAY_DB_PATH", gw.db_path()}});
    INFO("unknown session output: " << bad_out);
    CHECK(bad_status != 0);
  }
  SUBCASE("offline rebuild --all") {
    REQUIRE(sqlite3_exec(gw.db_path(), corruption(sid)).first == 0);
    auto [status, out, timed_out] = run_gateway_command({"rebuild", "--all"}, {{"GATEWAY_DB_PATH", gw.db_path()}});
    INFO("rebuild output: " << out);
    CHECK(status == 0);
    CHECK(projection_dump(gw.db_path(), sid) == rows);
  }
  SUBCASE("start-up finds the drift and rebuilds") {
    REQUIRE(sqlite3_exec(gw.db_path(), corruption(sid)).first == 0);
    REQUIRE(projection_dump(gw.db_path(), sid) != rows);
  }

  gw.start();
  CHECK(get_messages(gw.port(), sid) == original);
  CHECK(get_session(gw.port(), sid).at("message_count") == 6);
}
