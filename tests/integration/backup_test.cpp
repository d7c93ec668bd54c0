// The backups docs/operations.md describes, taken from a live gateway's database
// with the sqlite3 CLI (the online backup API, and VACUUM INTO) while a run streams:
// each copy passes integrity_check and serves every committed session and message
// when a second gateway starts on it.
#include <doctest/doctest.h>

#include "tests/support/gateway_process.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/sse_reader.hpp"

using namespace agw::test;
using namespace agw::test::runs;

namespace {

// Starts a gateway on a copy of the database at `path` and checks what it serves.
void check_copy(const std::string& path, const std::vector<std::string>& sessions, std::size_t messages_in_first) {
  auto [status, out] = sqlite3_exec(path, "PRAGMA integrity_check;");
  CHECK(status == 0);
  CHECK(out.find("ok") == 0);
  gateway_process restored(gateway_process::env_map{{"GATEWAY_DB_PATH", path}});
  CHECK(get_json(restored.port(), "/sessions").at("total").as_int64() == static_cast<std::int64_t>(sessions.size()));
  CHECK(get_messages(restored.port(), sessions.front()).size() == messages_in_first);
}

}  // namespace

TEST_CASE("backup: .backup and VACUUM INTO of a live database restore every committed session and message") {
  REQUIRE_MESSAGE(sqlite3_available(), "the sqlite3 CLI is needed (scripts/setup.sh installs it)");
  gateway_process gw;
  std::vector<std::string> sessions;
  for (int i = 0; i < 3; ++i) sessions.push_back(create_session(gw.port()));
  run_message(gw.port(), sessions.front(), "before the backup");
  // A run streams while the copies are taken: the gateway keeps writing.
  const std::string busy = create_mock_session(gw.port(), R"({"tokens":40,"tokens_per_second":40})");
  sessions.push_back(busy);
  auto live = start_message(gw.port(), busy, "during the backup");
  REQUIRE(live->head.status == 200);

  temp_dir backups;
  const auto online = (backups.path() / "online.db").string();
  const auto vacuumed = (backups.path() / "vacuumed.db").string();
  CHECK(sqlite3_exec(gw.db_path(), ".backup '" + online + "'").first == 0);
  CHECK(sqlite3_exec(gw.db_path(), "VACUUM INTO '" + vacuumed + "';").first == 0);
  REQUIRE(live->read_to_end(10s));

  check_copy(online, sessions, 2);
  check_copy(vacuumed, sessions, 2);
}
