#include "core/events/sse_format.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <string>
#include <vector>

#include "core/events/log_codec.hpp"

namespace {

using namespace std::chrono_literals;
using agw::core::event_frame;
using agw::core::event_type;
using agw::core::heartbeat_line;
using agw::core::make_event_frame;
using agw::core::reconnected_frame;
using agw::core::retry_line;

}  // namespace

TEST_CASE("sse_format: make_event_frame exact bytes") {
  struct row {
    const char* name;
    std::int64_t id;
    const char* type;
    const char* run_id;
    boost::json::object data;
    std::string data_line;  // expected JSON
  };
  const row rows[] = {
      {"newline escaped", 7, "token", "r", {{"content", "a\nb"}}, R"({"run_id":"r","source":"ai_agent","content":"a\nb"})"},
      {"cr and tab escaped",
       8,
       "token",
       "r",
       {{"content", "a\r\nb\tc"}},
       R"({"run_id":"r","source":"ai_agent","content":"a\r\nb\tc"})"},
      {"quotes and backslash",
       9,
       "token",
       "r",
       {{"content", "say \"hi\" \\o/"}},
       R"({"run_id":"r","source":"ai_agent","content":"say \"hi\" \\o/"})"},
      {"unicode passes through",
       10,
       "token",
       "run-1",
       {{"content", "h\xC3\xA9llo \xE2\x82\xAC \xF0\x9F\x98\x80"}},
       "{\"run_id\":\"run-1\",\"source\":\"ai_agent\",\"content\":\"h\xC3\xA9llo \xE2\x82\xAC \xF0\x9F\x98\x80\"}"},
      {"empty data", 1, "status", "r", {}, R"({"run_id":"r","source":"ai_agent"})"},
      {"keys after run_id in given order",
       123456789012,
       "done",
       "x",
       {{"b", 1}, {"a", true}, {"c", nullptr}},
       R"({"run_id":"x","source":"ai_agent","b":1,"a":true,"c":null})"},
      {"nested values",
       2,
       "tool_call",
       "r",
       {{"args", boost::json::object{{"x", boost::json::array{1, 2}}}}},
       R"({"run_id":"r","source":"ai_agent","args":{"x":[1,2]}})"},
  };
  for (const auto& r : rows) {
    CAPTURE(r.name);
    const event_frame f = make_event_frame(r.id, *agw::core::event_type_named(r.type), r.run_id, r.data);
    CHECK(f.id == r.id);
    CHECK(f.type_name() == r.type);
    CHECK(f.run_id() == r.run_id);
    CHECK(f.data() == r.data_line);
    CHECK(f.sse == "id: " + std::to_string(r.id) + "\nevent: " + r.type + "\ndata: " + r.data_line + "\n\n");
    // One data line: the only newlines are the three line ends and the blank line.
    CHECK(std::count(f.sse.begin(), f.sse.end(), '\n') == 4);
    CHECK(f.sse.find('\r') == std::string::npos);
  }
}

TEST_CASE("sse_format: the one-string-member form writes what the object form writes") {
  const char* values[] = {"hello", "", "a\nb", "say \"hi\" \\o/", "h\xC3\xA9llo \xF0\x9F\x98\x80", "\x01\x1f ctrl"};
  for (const char* v : values) {
    CAPTURE(v);
    const auto fast = agw::core::make_event_frame(12, event_type::token, "run-7", "content", v);
    const auto slow = make_event_frame(12, event_type::token, "run-7", {{"content", v}});
    CHECK(fast.sse == slow.sse);
    CHECK(fast.type == event_type::token);
    CHECK(fast.run_id() == "run-7");
    CHECK(boost::json::parse(fast.data()).at("content") == v);
  }
}

TEST_CASE(
    "sse_format: the one-string-member form matches the object form for every id, type, source and run, and so do its views") {
  using agw::core::event_source;
  const std::int64_t ids[] = {-1, 0, 9, 10, 99, 100, 1234567890123};
  const event_type types[] = {event_type::token, event_type::status, event_type::done};
  const event_source sources[] = {event_source::ai_agent, event_source::human_agent_on_behalf_of_ai_agent,
                                  event_source::customer};
  const char* runs[] = {"", "run-7", "0195f0c2-7a1e-7c3d-9a8b-4f2e6d1c0b9a"};
  const char* values[] = {"", "hello", " brave"};
  for (const auto id : ids)
    for (const auto type : types)
      for (const auto source : sources)
        for (const char* run : runs)
          for (const char* value : values) {
            CAPTURE(id);
            CAPTURE(run);
            CAPTURE(value);
            const auto fast = agw::core::make_event_frame(id, type, run, "status", value, source);
            const auto slow = make_event_frame(id, type, run, {{"status", value}}, source);
            CHECK(fast.sse == slow.sse);
            CHECK(fast.data() == slow.data());
            CHECK(fast.run_id() == run);
            CHECK(fast.id == id);
            CHECK(fast.type == type);
            CHECK(fast.sse.find('\0') == std::string::npos);
          }
}

TEST_CASE("sse_format: members_after_run_lead gives what follows the run id and source, in every form") {
  using agw::core::members_after_run_lead;
  CHECK(members_after_run_lead(make_event_frame(3, event_type::token, "r1", "content", "hi")) == R"(,"content":"hi"})");
  CHECK(members_after_run_lead(make_event_frame(3, event_type::token, "r1", {{"content", "a\"b"}})) == R"(,"content":"a\"b"})");
  CHECK(members_after_run_lead(make_event_frame(3, event_type::done, "r1", boost::json::object{})) == "}");
  CHECK(members_after_run_lead(agw::core::make_event_frame_after_run(3, event_type::token, "r1", "customer",
                                                                     R"(,"content":"x"})")) == R"(,"content":"x"})");
  CHECK(members_after_run_lead(make_event_frame(-1, event_type::token, "", "content", "x")) == R"(,"content":"x"})");
  // Data with another lead: nothing.
  CHECK(members_after_run_lead(agw::core::make_event_frame_with_data(3, event_type::token, R"({"run_id":"r1","content":"x"})"))
            .empty());
  CHECK(members_after_run_lead(agw::core::make_reconnected_frame(3, 3, false, 1)).empty());
}

TEST_CASE("sse_format: split_run_lead splits what the builders write, rows from before sources, and nothing else") {
  using agw::core::split_run_lead;
  SUBCASE("every builder's data splits into run, source and the members after them") {
    const auto token = make_event_frame(3, event_type::token, "r1", "content", "hi");
    const auto object = make_event_frame(3, event_type::tool_call, "r1", {{"id", "c\"1"}, {"n", 2}});
    const auto empty = make_event_frame(3, event_type::done, "r1", boost::json::object{});
    const auto human = make_event_frame(3, event_type::token, "r1", "content", "x", agw::core::event_source::human_agent);
    const auto stored = agw::core::make_event_frame_after_run(3, event_type::token, "r1", "customer", R"(,"a":1})");
    struct row {
      const event_frame* frame;
      std::string_view source, rest;
    };
    for (const auto& [frame, source, rest] :
         {row{&token, "ai_agent", R"(,"content":"hi"})"}, row{&object, "ai_agent", R"(,"id":"c\"1","n":2})"},
          row{&empty, "ai_agent", "}"}, row{&human, "human_agent", R"(,"content":"x"})"},
          row{&stored, "customer", R"(,"a":1})"}}) {
      CAPTURE(frame->data());
      // From the data alone, and from the frame's layout (which skips finding the run id).
      for (const auto& split : {split_run_lead(frame->data()), split_run_lead(*frame)}) {
        REQUIRE(split);
        CHECK(split->run == "r1");
        CHECK(split->source == source);
        CHECK(split->rest == rest);
      }
    }
  }
  SUBCASE("a frame without a run id splits by its data") {
    const auto no_run = make_event_frame(-1, event_type::token, "", "content", "x");
    const auto split = split_run_lead(no_run);
    REQUIRE(split);
    CHECK(split->run.empty());
    CHECK(split->source == "ai_agent");
    CHECK(split->rest == R"(,"content":"x"})");
    const auto other = agw::core::make_event_frame_with_data(3, event_type::token, R"({"run_id":"r1","content":"x"})");
    const auto other_split = split_run_lead(other);
    REQUIRE(other_split);
    CHECK(other_split->run == "r1");
    CHECK_FALSE(other_split->source);
    CHECK(other_split->rest == R"(,"content":"x"})");
    CHECK_FALSE(split_run_lead(agw::core::make_reconnected_frame(3, 3, false, 1)));
  }
  SUBCASE("data from before sources: no source, the rest after the run id") {
    const auto split = split_run_lead(R"({"run_id":"r1","content":"x"})");
    REQUIRE(split);
    CHECK(split->run == "r1");
    CHECK_FALSE(split->source);
    CHECK(split->rest == R"(,"content":"x"})");
    const auto bare = split_run_lead(R"({"run_id":"r1"})");
    REQUIRE(bare);
    CHECK(bare->rest == "}");
    // Cut right after the run id's quote: nothing after it, still a split.
    const auto cut = split_run_lead(R"({"run_id":"r1")");
    REQUIRE(cut);
    CHECK_FALSE(cut->source);
    CHECK(cut->rest.empty());
  }
  SUBCASE("a source member that is there but empty is not the same as none") {
    const auto split = split_run_lead(R"({"run_id":"r1","source":"","x":1})");
    REQUIRE(split);
    REQUIRE(split->source);
    CHECK(split->source->empty());
    CHECK(split->rest == R"(,"x":1})");
    const auto frame = agw::core::make_event_frame_after_run(3, event_type::token, "r1", "", R"(,"x":1})");
    CHECK(agw::core::members_after_run_lead(frame) == R"(,"x":1})");
    // A closed source with nothing after it.
    const auto closed = split_run_lead(R"({"run_id":"r1","source":"customer")");
    REQUIRE(closed);
    CHECK(closed->source == "customer");
    CHECK(closed->rest.empty());
  }
  SUBCASE("an empty run id splits (the caller decides what it means)") {
    const auto split = split_run_lead(R"({"run_id":"","source":"ai_agent","content":"x"})");
    REQUIRE(split);
    CHECK(split->run.empty());
    CHECK(split->source == "ai_agent");
    CHECK(split->rest == R"(,"content":"x"})");
  }
  SUBCASE("anything else: nothing") {
    for (std::string_view data : {R"({"content":"x","run_id":"r1"})", R"({"run_id":"r1)", R"({"run_id":"r1","source":"ai_ag)",
                                  R"({ "run_id":"r1"})", "", "{}", "x"}) {
      CAPTURE(data);
      CHECK_FALSE(split_run_lead(data));
    }
  }
}

TEST_CASE("sse_format: make_event_frame with the brief's example") {
  const auto f = make_event_frame(7, event_type::token, "r", {{"content", "a\nb"}});
  CHECK(f.sse == "id: 7\nevent: token\ndata: {\"run_id\":\"r\",\"source\":\"ai_agent\",\"content\":\"a\\nb\"}\n\n");
}

TEST_CASE("sse_format: retry_line, heartbeat_line") {
  CHECK(retry_line(3000ms) == "retry: 3000\n");
  CHECK(retry_line(0ms) == "retry: 0\n");
  CHECK(retry_line(3600000ms) == "retry: 3600000\n");
  CHECK(heartbeat_line() == ": heartbeat\n");
}

TEST_CASE("sse_format: reconnected_frame exact bytes") {
  CHECK(reconnected_frame(5, 3, false, 1) ==
        "event: reconnected\ndata: {\"last_event_id\":5,\"replayed\":3,\"gap\":false,\"oldest_event_id\":1}\n\n");
  CHECK(reconnected_frame(0, 0, true, 0) ==
        "event: reconnected\ndata: {\"last_event_id\":0,\"replayed\":0,\"gap\":true,\"oldest_event_id\":0}\n\n");
  // No id: line: the frame is unnumbered and must not move the client's Last-Event-ID.
  CHECK(reconnected_frame(9, 1, false, 2).find("id:") == std::string::npos);
}

TEST_CASE("sse_format: a frame's record goes through the log codec and comes back the same") {
  const event_frame frames[] = {
      make_event_frame(7, event_type::token, "r", {{"content", "a\nb"}}),
      make_event_frame(1, event_type::status, "run-x", {{"state", "running"}}),
      make_event_frame(9007199254740993, event_type::done, "r2", {{"content", "h\xC3\xA9"}, {"n", 3}}),
      make_event_frame(42, event_type::tool_result, "", {{"output", "line1\nline2\n\nline4"}}),
      // Another source than the agent's: the log names it with the run.
      make_event_frame(43, event_type::token, "op-run", "content", "hi", agw::core::event_source::human_agent),
  };
  for (const auto& original : frames) {
    CAPTURE(original.sse);
    const std::vector<agw::core::frame_ptr> one{std::make_shared<const event_frame>(original)};
    const auto decoded = agw::core::decode_log_frames(agw::core::encode_log_frames(one), original.id);
    REQUIRE(decoded.size() == 1);
    const auto& parsed = *decoded.front();
    CHECK(parsed.id == original.id);
    CHECK(parsed.type == original.type);
    CHECK(parsed.run_id() == original.run_id());
    CHECK(parsed.data() == original.data());
    CHECK(parsed.sse == original.sse);
    CHECK(boost::json::parse(parsed.data()) == boost::json::parse(original.data()));
  }
}

TEST_CASE("sse_format: reconnected is an unnumbered frame of its own type, without a run") {
  const auto f = agw::core::make_reconnected_frame(5, 3, false, 1);
  CHECK(f.id == -1);
  CHECK(f.type == event_type::reconnected);
  CHECK(f.run_id().empty());
  CHECK(f.sse == reconnected_frame(5, 3, false, 1));
  CHECK(f.data() == R"({"last_event_id":5,"replayed":3,"gap":false,"oldest_event_id":1})");
}

TEST_CASE("sse_format: strings are escaped exactly as boost::json serializes them, for every byte") {
  for (int b = 0; b < 256; ++b) {
    CAPTURE(b);
    const std::string value = std::string("a") + static_cast<char>(b) + "z";
    const auto frame = agw::core::make_event_frame(1, event_type::token, "r", "content", value);
    const std::string expected =
        R"({"run_id":"r","source":"ai_agent","content":)" + boost::json::serialize(boost::json::string(value)) + "}";
    CHECK(frame.data() == expected);
  }
}
