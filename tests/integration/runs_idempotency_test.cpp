// Idempotency-Key on POST /sessions/{id}/messages: a retry stores nothing and
// gets the first request's run (replayed when over, attached when live).
#include <doctest/doctest.h>

#include "tests/support/gateway_process.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/sse_reader.hpp"

using namespace agw::test;
using namespace agw::test::runs;

namespace {

struct frame_key {
  std::optional<std::int64_t> id;
  std::string event;
  std::string data;
  bool operator==(const frame_key&) const = default;
};

std::vector<frame_key> keys_of(const sse_parser& p) {
  std::vector<frame_key> out;
  for (const auto& f : p.frames) out.push_back({f.id, f.event, f.data_text});
  return out;
}

std::string dump(const sse_parser& p) {
  std::string out;
  for (const auto& f : p.frames) out += f.raw;
  return out;
}

}  // namespace

TEST_CASE("runs: an Idempotency-Key retry after the run replays it and stores nothing") {
  gateway_process gw;
  const std::string sid = create_session(gw.port());
  const header_list key{{"Idempotency-Key", "order-42"}};
  auto first = run_message(gw.port(), sid, "exactly once please", key);
  const std::string run_id = first->head.header("X-Run-Id");
  check_run_stream(*first, run_id);
  auto before = get_session(gw.port(), sid);
  CHECK(before.at("message_count") == 2);
  const auto messages_before = get_messages(gw.port(), sid);

  auto retry = run_message(gw.port(), sid, "exactly once please", key);
  INFO("first:\n" << dump(first->parser) << "retry:\n" << dump(retry->parser));
  CHECK(retry->head.header("Content-Type") == "text/event-stream");
  CHECK(retry->head.header("X-Run-Id") == run_id);
  CHECK(retry->head.header("Content-Location") == "/sessions/" + sid + "/events");
  check_run_stream(*retry, run_id);
  CHECK(keys_of(retry->parser) == keys_of(first->parser));
  CHECK(retry->parser.retry == first->parser.retry);

  auto after = get_session(gw.port(), sid);
  CHECK(after.at("message_count") == 2);
  CHECK(after.at("last_event_id") == before.at("last_event_id"));
  CHECK(get_messages(gw.port(), sid) == messages_before);

  // A third time, after another run on the session, still the same replay.
  auto other = run_message(gw.port(), sid, "something else");
  auto third = run_message(gw.port(), sid, "exactly once please", key);
  CHECK(third->head.header("X-Run-Id") == run_id);
  CHECK(keys_of(third->parser) == keys_of(first->parser));
  CHECK(get_session(gw.port(), sid).at("message_count") == 4);
  CHECK(get_session(gw.port(), sid).at("last_event_id") == other->parser.last_id());

  // The same key with other content is refused and stores nothing.
  auto mismatch = http_call(gw.port(), "POST", messages_path(sid), message_body("different content"),
                            {{"Content-Type", "application/json"}, {"Idempotency-Key", "order-42"}});
  check_error(mismatch, 422, "idempotency_mismatch");
  CHECK(get_session(gw.port(), sid).at("message_count") == 4);

  // Keys belong to their session: another session's run with the same key is its own.
  const std::string sid2 = create_session(gw.port());
  auto elsewhere = run_message(gw.port(), sid2, "exactly once please", key);
  CHECK(elsewhere->head.header("X-Run-Id") != run_id);
  CHECK(*elsewhere->parser.frames.front().id == 1);
  CHECK(get_session(gw.port(), sid2).at("message_count") == 2);
}

TEST_CASE("runs: an Idempotency-Key retry while the run is live attaches to it") {
  gateway_process gw;
  const std::string sid = create_mock_session(gw.port(), R"({"tokens":20,"tokens_per_second":40})");
  const header_list key{{"Idempotency-Key", "live-key"}};
  auto first = start_message(gw.port(), sid, "slow one", key);
  REQUIRE(first->head.status == 200);
  const std::string run_id = first->head.header("X-Run-Id");
  REQUIRE(first->read_until([](const sse_parser& p) { return p.count("token") >= 2; }, 5s));

  auto retry = start_message(gw.port(), sid, "slow one", key);
  INFO("retry answer: " << retry->head.status << " " << retry->head.body);
  REQUIRE(retry->head.status == 200);
  CHECK(retry->head.header("X-Run-Id") == run_id);
  CHECK(!retry->parser.has_done());
  REQUIRE(retry->read_to_end(10s));
  REQUIRE(first->read_to_end(10s));
  check_run_stream(*first, run_id);
  check_run_stream(*retry, run_id);
  INFO("first:\n" << dump(first->parser) << "retry:\n" << dump(retry->parser));
  // From the start of the run: the same events.
  CHECK(keys_of(retry->parser) == keys_of(first->parser));
  CHECK(retry->parser.count("token") == 20);
  CHECK(retry->parser.frames.back().obj().at("assistant_data").at("status") == "complete");

  auto s = get_session(gw.port(), sid);
  CHECK(s.at("message_count") == 2);
  CHECK(s.at("last_event_id") == first->parser.last_id());

  // A mismatching retry while live is refused too.
  auto live2 = start_message(gw.port(), sid, "another slow one", {{"Idempotency-Key", "live-key-2"}});
  REQUIRE(live2->head.status == 200);
  auto mismatch = http_call(gw.port(), "POST", messages_path(sid), message_body("not the same"),
                            {{"Content-Type", "application/json"}, {"Idempotency-Key", "live-key-2"}});
  check_error(mismatch, 422, "idempotency_mismatch");
  REQUIRE(live2->read_to_end(10s));
  CHECK(get_session(gw.port(), sid).at("message_count") == 4);
}

TEST_CASE("runs: an Idempotency-Key retry is replayed from the durable log, also after a restart") {
  // A ring of 10 events: the first run's 33 events are only in the durable log.
  gateway_process gw(gateway_process::env_map{{"GATEWAY_SSE_BUFFER_SIZE", "10"}});
  const std::string sid = create_mock_session(gw.port(), R"({"tokens":30,"plan":["a"]})");
  const header_list key{{"Idempotency-Key", "durable-key"}};
  auto first = run_message(gw.port(), sid, "remember me", key);
  const std::string run_id = first->head.header("X-Run-Id");
  check_run_stream(*first, run_id);
  run_message(gw.port(), sid, "push the ring on");

  auto retry = run_message(gw.port(), sid, "remember me", key);
  CHECK(retry->head.header("X-Run-Id") == run_id);
  CHECK(keys_of(retry->parser) == keys_of(first->parser));
  CHECK(get_session(gw.port(), sid).at("message_count") == 4);

  gw.kill9();
  gw.start();
  auto after_crash = run_message(gw.port(), sid, "remember me", key);
  INFO("first:\n" << dump(first->parser) << "after the restart:\n" << dump(after_crash->parser));
  CHECK(after_crash->head.header("X-Run-Id") == run_id);
  check_run_stream(*after_crash, run_id);
  CHECK(keys_of(after_crash->parser) == keys_of(first->parser));
  CHECK(get_session(gw.port(), sid).at("message_count") == 4);
  check_error(http_call(gw.port(), "POST", messages_path(sid), message_body("changed"),
                        {{"Content-Type", "application/json"}, {"Idempotency-Key", "durable-key"}}),
              422, "idempotency_mismatch");
}

TEST_CASE("runs: two POSTs racing with one Idempotency-Key share one run") {
  gateway_process gw;
  auto sid = create_mock_session(gw.port(), R"({"tokens":20,"tokens_per_second":100})");
  for (int trial = 0; trial < 5; ++trial) {
    CAPTURE(trial);
    const std::string key = "race-" + std::to_string(trial);
    // Both requests are on the wire before either answer head is read.
    auto first = std::make_unique<sse_reader>(gw.port());
    auto second = std::make_unique<sse_reader>(gw.port());
    const header_list headers{{"Content-Type", "application/json"}, {"Idempotency-Key", key}};
    first->send_only("POST", messages_path(sid), message_body("same"), headers);
    second->send_only("POST", messages_path(sid), message_body("same"), headers);
    first->read_head_now();
    second->read_head_now();
    REQUIRE(first->head.status == 200);
    REQUIRE(second->head.status == 200);
    CHECK(first->head.header("X-Run-Id") == second->head.header("X-Run-Id"));
    CHECK(first->read_to_end(20s));
    CHECK(second->read_to_end(20s));
  }
  // One user and one assistant message per key.
  CHECK(get_session(gw.port(), sid).at("message_count") == 10);
}
