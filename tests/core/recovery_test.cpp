#include "core/recovery.hpp"

#include <doctest/doctest.h>

#include "core/clock.hpp"

#include <algorithm>
#include <boost/json/parse.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/checkpoint.hpp"
#include "core/events/log_codec.hpp"
#include "core/events/sse_format.hpp"
#include "core/projection.hpp"
#include "core/store_executor.hpp"  // fake_store.hpp names it without including it
#include "tests/support/fake_store.hpp"

namespace {

// Real time: these cases never wait on it.
const agw::core::real_clock wall_clock;

using agw::core::event_type;
using agw::core::frame_ptr;

frame_ptr frame(std::int64_t id, event_type type, const std::string& run_id, const std::string& key, const std::string& value) {
  return std::make_shared<const agw::core::event_frame>(agw::core::make_event_frame(id, type, run_id, key, value));
}
frame_ptr token(std::int64_t id, const std::string& run_id, const std::string& text) {
  return frame(id, event_type::token, run_id, "content", text);
}
frame_ptr status(std::int64_t id, const std::string& run_id, const std::string& s) {
  return frame(id, event_type::status, run_id, "status", s);
}

agw::core::message_record message(const std::string& id, const std::string& role, const std::string& content,
                                  std::int64_t created_at_ms) {
  agw::core::message_record m;
  m.id = id;
  m.role = role;
  m.content = content;
  m.created_at_ms = created_at_ms;
  return m;
}

boost::json::object data_of(const frame_ptr& f) { return boost::json::parse(f->data()).as_object(); }
std::string str(const boost::json::value& v) { return std::string(v.as_string()); }

// The fake store and one connection on it, as main hands recover_at_startup its first connection.
struct recovery_fixture {
  agw::core::session_record add_session(const std::string& id) {
    agw::core::session_record s;
    s.id = id;
    s.thread_id = "thread-" + id;
    s.created_at_ms = s.updated_at_ms = 1000;
    db.seed([&](agw::test::fake_data& d) { d.sessions[id] = s; });
    return s;
  }
  // A checkpoint and its projection, the way the run paths write them.
  void checkpoint(const agw::core::session_record& s, std::int64_t version, const agw::core::conversation_state& state) {
    agw::core::save_checkpoint(*conn, wall_clock, s, version, state);
  }
  // A session with an earlier, finished exchange and a run cut short at start-up: its
  // checkpoint has the run `running`, events_before = `events_before`.
  agw::core::conversation_state running_state(const std::string& run_id, std::int64_t events_before,
                                              std::optional<std::string> callback_url = std::nullopt) {
    agw::core::conversation_state state;
    // Message ids are unique per run: the fake keys every session's messages by id.
    state.messages.push_back(message(run_id + ":u1", "user", "before", 1000));
    state.messages.push_back(message(run_id + ":a1", "assistant", "old answer", 1001));
    state.messages.push_back(message(run_id + ":u2", "user", "say hello", 1002));
    state.run =
        agw::core::checkpoint_run{run_id, "running", run_id + ":u2", 1002, std::nullopt, events_before, std::move(callback_url)};
    return state;
  }
  void append(const std::string& session_id, const std::vector<frame_ptr>& frames) {
    conn->append_events({session_id, frames.front()->id, frames.back()->id, agw::core::encode_log_frames(frames), 0});
  }
  std::vector<frame_ptr> events(const std::string& session_id) { return conn->events_after(session_id, 0, 100000); }
  agw::core::checkpoint_record latest(const agw::core::session_record& s) {
    auto cp = conn->latest_checkpoint(s.thread_id);
    REQUIRE(cp);
    return *cp;
  }
  agw::core::conversation_state state_of(const agw::core::session_record& s) {
    return agw::core::parse_checkpoint(latest(s).state, s.id);
  }
  agw::core::recovery_report recover() { return agw::core::recover_at_startup(*conn, wall_clock); }

  agw::test::fake_db db;
  std::unique_ptr<agw::core::store_connection> conn = db.connect();
};

}  // namespace

TEST_CASE("recovery: a running run is closed as interrupted with its own committed tokens, then error and done") {
  recovery_fixture f;
  auto s = f.add_session("s1");
  // Events 1..4: an earlier run; 5..9: the cut-short run, with one token of another run among them.
  f.append("s1", {status(1, "run-old", "thinking"), token(2, "run-old", "old answer"), status(3, "run-old", "x"),
                  frame(4, event_type::done, "run-old", "note", "old")});
  f.append("s1", {status(5, "run-1", "thinking"), token(6, "run-1", "Hel"), token(7, "run-1", "lo")});
  f.append("s1", {token(8, "run-x", " NOT MINE"), token(9, "run-1", " there")});
  f.checkpoint(s, 4, f.running_state("run-1", 4));

  const auto report = f.recover();
  CHECK(report.sessions_checked == 1);
  CHECK(report.runs_interrupted == 1);
  CHECK(report.projections_rebuilt == 0);  // the new message was projected with the checkpoint

  // The checkpoint's next version closes the run with exactly what was streamed.
  CHECK(f.latest(s).version == 5);
  const auto state = f.state_of(s);
  REQUIRE(state.messages.size() == 4);
  const auto& answer = state.messages.back();
  CHECK(answer.role == "assistant");
  CHECK(answer.content == "Hello there");
  CHECK(answer.token_count == 3);
  CHECK(answer.status == "interrupted");
  CHECK(answer.parent_id == "run-1:u2");
  REQUIRE(state.run);
  CHECK(state.run->state == "interrupted");
  CHECK(state.run->ended_at_ms == answer.created_at_ms);
  // ... and projected.
  const auto rows = f.conn->all_messages("s1");
  REQUIRE(rows.size() == 4);
  CHECK(rows.back().id == answer.id);
  CHECK(rows.back().seq == 4);

  // Followers see the run end: error (interrupted) and done after the last event id.
  const auto ev = f.events("s1");
  REQUIRE(ev.size() == 11);
  CHECK(ev[9]->id == 10);
  CHECK(ev[9]->type == event_type::error);
  CHECK(ev[9]->run_id() == "run-1");
  CHECK(str(data_of(ev[9]).at("code")) == "interrupted");
  CHECK(str(data_of(ev[9]).at("message")) == "the server stopped while this run was live");
  CHECK(ev[10]->id == 11);
  CHECK(ev[10]->type == event_type::done);
  CHECK(ev[10]->run_id() == "run-1");
  const auto done = data_of(ev[10]).at("assistant_data").as_object();
  CHECK(str(done.at("id")) == answer.id);
  CHECK(str(done.at("content")) == "Hello there");
  CHECK(str(done.at("status")) == "interrupted");
  CHECK(f.conn->find_session("s1")->last_event_id == 11);
  CHECK(f.conn->list_webhook_deliveries("s1").empty());

  // A second pass finds nothing left to repair.
  const auto again = f.recover();
  CHECK(again.runs_interrupted == 0);
  CHECK(again.projections_rebuilt == 0);
  CHECK(f.events("s1").size() == 11);
}

TEST_CASE("recovery: a run cut short before its first event gets empty content; ids follow the session's last id") {
  recovery_fixture f;
  auto s = f.add_session("s1");
  // The log was trimmed by retention past the run's start: only the session row knows id 20.
  f.db.seed([](agw::test::fake_data& d) { d.sessions["s1"].last_event_id = 20; });
  f.checkpoint(s, 1, f.running_state("run-1", 20));
  s.last_event_id = 20;

  const auto report = f.recover();
  CHECK(report.runs_interrupted == 1);
  const auto state = f.state_of(s);
  CHECK(state.messages.back().content.empty());
  CHECK(state.messages.back().token_count == 0);
  const auto ev = f.events("s1");
  REQUIRE(ev.size() == 2);
  CHECK(ev[0]->id == 21);
  CHECK(ev[0]->type == event_type::error);
  CHECK(ev[1]->id == 22);
  CHECK(ev[1]->type == event_type::done);
}

TEST_CASE("recovery: an interrupted run with a callback_url gets its outbox row") {
  recovery_fixture f;
  auto s = f.add_session("s1");
  f.append("s1", {status(1, "run-1", "thinking"), token(2, "run-1", "partial")});
  f.checkpoint(s, 1, f.running_state("run-1", 0, "https://example.com/hook"));

  f.recover();
  const auto deliveries = f.conn->list_webhook_deliveries("s1");
  REQUIRE(deliveries.size() == 1);
  const auto& d = deliveries.front();
  CHECK(d.run_id == "run-1");
  CHECK(d.url == "https://example.com/hook");
  CHECK(d.status == "pending");
  const auto payload = boost::json::parse(d.payload).as_object();
  CHECK(str(payload.at("status")) == "error");  // interrupted runs are reported as errors
  CHECK(str(payload.at("output")) == "partial");
  CHECK(str(payload.at("message_id")) == f.state_of(s).messages.back().id);
  CHECK(payload.at("token_usage").at("input").as_int64() == 0);
  CHECK(payload.at("token_usage").at("output").as_int64() == 1);
}

TEST_CASE("recovery: a projection that drifted from its checkpoint is rebuilt; sessions without checkpoints are fine") {
  recovery_fixture f;
  // "drift": the checkpoint has two messages, the projection lost one and changed the other.
  auto drift = f.add_session("drift");
  agw::core::conversation_state done;
  done.messages.push_back(message("u1", "user", "hi", 1000));
  done.messages.push_back(message("a1", "assistant", "hello", 1001));
  done.run = agw::core::checkpoint_run{"run-1", "completed", "u1", 1000, 1001, 0, std::nullopt};
  f.checkpoint(drift, 1, done);
  f.db.seed([](agw::test::fake_data& d) {
    d.messages.erase("a1");
    d.messages.at("u1").content = "tampered";
  });
  // "empty": no checkpoint, no messages. "stray": no checkpoint, but a message row.
  f.add_session("empty");
  f.add_session("stray");
  auto orphan = message("m1", "user", "orphan", 1000);
  orphan.session_id = "stray";
  orphan.seq = 1;
  f.conn->upsert_message(orphan);
  // "fine": checkpoint and projection agree (its own message ids: the fake keys messages by id).
  auto fine = f.add_session("fine");
  agw::core::conversation_state agreed;
  agreed.messages.push_back(message("u9", "user", "hi", 1000));
  agreed.messages.push_back(message("a9", "assistant", "hello", 1001));
  agreed.run = agw::core::checkpoint_run{"run-9", "completed", "u9", 1000, 1001, 0, std::nullopt};
  f.checkpoint(fine, 1, agreed);

  const auto report = f.recover();
  CHECK(report.sessions_checked == 4);
  CHECK(report.runs_interrupted == 0);
  CHECK(report.projections_rebuilt == 2);  // drift and stray

  const auto rows = f.conn->all_messages("drift");
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].content == "hi");
  CHECK(rows[1].id == "a1");
  CHECK(rows[1].content == "hello");
  CHECK_FALSE(agw::core::projection_drifted(*f.conn, *f.conn->find_session("drift")));
  CHECK(f.conn->all_messages("empty").empty());
  CHECK(f.conn->all_messages("stray").empty());  // no checkpoint: the projection is empty
  CHECK(f.conn->all_messages("fine").size() == 2);
  CHECK(f.events("empty").empty());
  CHECK(f.latest(drift).version == 1);  // a rebuild writes no checkpoint
}

TEST_CASE("recovery: a session whose repair throws is rolled back and does not stop the others") {
  recovery_fixture f;
  std::vector<agw::core::session_record> sessions;
  for (const char* id : {"a", "b", "c", "d"}) {
    auto s = f.add_session(id);
    f.append(id, {status(1, "run-" + s.id, "thinking"), token(2, "run-" + s.id, s.id)});
    f.checkpoint(s, 1, f.running_state("run-" + s.id, 0));
    sessions.push_back(s);
  }
  // "b": its commit fails (fault injection; sessions are repaired in id order, one commit each).
  f.db.fail_commit_number(2);
  // "c": its checkpoint cannot be read.
  f.db.seed([](agw::test::fake_data& d) {
    for (auto& cp : d.checkpoints)
      if (cp.session_id == "c") cp.state = "not json";
  });

  const auto report = f.recover();
  CHECK(f.db.failed_commits.load() == 1);
  CHECK(f.db.rollbacks.load() == 2);
  CHECK(report.sessions_checked == 4);
  CHECK(report.runs_interrupted == 2);  // "b"'s repair was rolled back: not counted

  for (const auto& s : {sessions[0], sessions[3]}) {
    CAPTURE(s.id);
    CHECK(f.state_of(s).run->state == "interrupted");
    CHECK(f.state_of(s).messages.back().content == s.id);
    CHECK(f.events(s.id).size() == 4);
  }
  // "b" and "c" are as they were: still running, no events added.
  CHECK(f.latest(sessions[1]).version == 1);
  CHECK(f.state_of(sessions[1]).run->state == "running");
  CHECK(f.events("b").size() == 2);
  CHECK(f.latest(sessions[2]).version == 1);
  CHECK(f.events("c").size() == 2);

  // The next start-up repairs "b" (its fault is gone); "c" stays unreadable.
  const auto next = f.recover();
  CHECK(next.runs_interrupted == 1);
  CHECK(f.state_of(sessions[1]).run->state == "interrupted");
  CHECK(f.events("b").size() == 4);
}

// The report counts a session's repair only once its transaction committed (main logs
// "N interrupted runs closed").
TEST_CASE("recovery: the report counts only repairs that committed") {
  recovery_fixture f;
  for (const char* id : {"a", "b", "c"}) {
    auto s = f.add_session(id);
    f.checkpoint(s, 1, f.running_state(std::string("run-") + id, 0));
  }
  f.db.fail_commit_number(2);
  const auto report = f.recover();
  CHECK(report.runs_interrupted == 2);
}

// A crash after the final checkpoint committed (run "completed") but before its done event
// committed leaves the log without the run's done: recovery appends it (the checkpoint's
// answer), so followers resuming that session see the run end, exactly once.
TEST_CASE("recovery: a finished run whose done never reached the log gets its done") {
  recovery_fixture f;
  auto s = f.add_session("s1");
  f.append("s1", {status(1, "run-1", "thinking"), token(2, "run-1", "hi"), status(3, "run-1", "usage-ish")});
  auto state = f.running_state("run-1", 0);
  auto answer = message("a2", "assistant", "hi", 1003);
  answer.parent_id = "run-1:u2";
  state.messages.push_back(answer);
  state.run->state = "completed";
  state.run->ended_at_ms = 1003;
  f.checkpoint(s, 2, state);

  f.recover();
  const auto ev = f.events("s1");
  REQUIRE(ev.size() == 4);
  CHECK(ev.back()->type == event_type::done);
  CHECK(ev.back()->run_id() == "run-1");
}

// When a run's final checkpoint could not be stored, drive_run still ends the run in the
// log (error storage_error + done, status error) while the checkpoint keeps it "running".
// Recovery sees the run's done in the log: it records the run as it ended and appends
// nothing (no second end).
TEST_CASE("recovery: a running run whose done is already in the log is not closed twice") {
  recovery_fixture f;
  auto s = f.add_session("s1");
  f.append("s1", {status(1, "run-1", "thinking"), token(2, "run-1", "hi"),
                  frame(3, event_type::error, "run-1", "code", "storage_error"),
                  frame(4, event_type::done, "run-1", "note", "the run's end")});
  f.checkpoint(s, 1, f.running_state("run-1", 0));

  f.recover();
  const auto ev = f.events("s1");
  CHECK(ev.size() == 4);
}
