#include "core/events/log_codec.hpp"

#include <doctest/doctest.h>

#include <boost/json/object.hpp>
#include <string>
#include <vector>

#include "core/events/sse_format.hpp"
#include "core/storage/store_error.hpp"

namespace {

using agw::core::decode_log_frames;
using agw::core::encode_log_frames;
using agw::core::event_frame;
using agw::core::event_type;
using agw::core::frame_ptr;
using agw::core::make_event_frame;

frame_ptr share(event_frame f) { return std::make_shared<const event_frame>(std::move(f)); }

// A run of consecutive frames of every kind a run produces, and a few odd ones.
std::vector<frame_ptr> sample(std::int64_t first) {
  const std::string run = "0b7e3c1a-5f2d-4c8b-9a6e-1d2f3a4b5c6d", other = "5a1b2c3d-0000-4000-8000-00000000beef";
  std::vector<frame_ptr> out;
  std::int64_t id = first;
  out.push_back(share(make_event_frame(id++, event_type::status, run, "status", "thinking")));
  out.push_back(share(make_event_frame(id++, event_type::token, run, "content", "hello")));
  out.push_back(
      share(make_event_frame(id++, event_type::token, run, "content", " a \"quoted\"\nline\\ with \t tabs and \xC3\xA9")));
  out.push_back(share(
      make_event_frame(id++, event_type::tool_call, run,
                       {{"id", "call_1"}, {"name", "calculator"}, {"args", boost::json::object{{"expression", "2+3*4"}}}})));
  out.push_back(share(
      make_event_frame(id++, event_type::tool_result, run, {{"tool_call_id", "call_1"}, {"output", "14\n"}, {"exit_code", 0}})));
  out.push_back(share(make_event_frame(id++, event_type::usage, run, boost::json::object{})));
  out.push_back(share(make_event_frame(id++, event_type::token, other, "content", "another run")));
  out.push_back(share(make_event_frame(id++, event_type::token, "", "content", "no run id")));
  out.push_back(
      share(make_event_frame(id++, event_type::done, run, {{"assistant_data", boost::json::object{{"content", "hello"}}}})));
  return out;
}

}  // namespace

TEST_CASE("log_codec: decoding gives back every frame's exact text, with consecutive ids") {
  for (std::int64_t first : {std::int64_t{1}, std::int64_t{42}, std::int64_t{9007199254740000}}) {
    CAPTURE(first);
    const auto frames = sample(first);
    const auto row = encode_log_frames(frames);
    std::size_t text_bytes = 0;
    for (const auto& f : frames) text_bytes += f->sse.size();
    CHECK(row.size() < text_bytes * 3 / 4);  // the point of it
    const auto decoded = decode_log_frames(row, first);
    REQUIRE(decoded.size() == frames.size());
    for (std::size_t i = 0; i < frames.size(); ++i) {
      CAPTURE(i);
      CHECK(decoded[i]->id == frames[i]->id);
      CHECK(decoded[i]->sse == frames[i]->sse);
    }
  }
  CHECK(decode_log_frames("", 7).empty());
}

TEST_CASE("log_codec: a token is stored in about a quarter of its frame") {
  const std::vector<frame_ptr> one{
      share(make_event_frame(1234, event_type::token, "0b7e3c1a-5f2d-4c8b-9a6e-1d2f3a4b5c6d", "content", " tok17"))};
  std::string row;
  encode_log_frames(one, row);
  const auto two = encode_log_frames(std::vector<frame_ptr>{
      one[0], share(make_event_frame(1235, event_type::token, "0b7e3c1a-5f2d-4c8b-9a6e-1d2f3a4b5c6d", "content", " tok18"))});
  // The second token costs only its own line: the run is named once.
  CHECK(two.size() - row.size() < one[0]->sse.size() / 3);
}

TEST_CASE("log_codec: encodings of consecutive frames concatenate") {
  const auto frames = sample(10);
  const std::size_t cut = 4;
  const auto head = encode_log_frames(std::span<const frame_ptr>(frames).first(cut));
  const auto tail = encode_log_frames(std::span<const frame_ptr>(frames).subspan(cut));
  const auto decoded = decode_log_frames(head + tail, 10);
  REQUIRE(decoded.size() == frames.size());
  for (std::size_t i = 0; i < frames.size(); ++i) CHECK(decoded[i]->sse == frames[i]->sse);
}

TEST_CASE("log_codec: rows of plain frame text (earlier versions) split by their id lines") {
  const std::string a = make_event_frame(1, event_type::token, "r", "content", "a").sse,
                    b = make_event_frame(2, event_type::token, "r", "content", "b").sse;
  struct row {
    const char* name;
    std::string input;
    std::vector<std::int64_t> ids;
    std::vector<std::string> frames;
  };
  const row rows[] = {
      {"one", a, {1}, {a}},
      {"two", a + b, {1, 2}, {a, b}},
      {"big id",
       "id: 9007199254740993\nevent: token\ndata: {}\n\n",
       {9007199254740993},
       {"id: 9007199254740993\nevent: token\ndata: {}\n\n"}},
  };
  for (const auto& r : rows) {
    CAPTURE(r.name);
    const auto events = decode_log_frames(r.input, 999);
    std::vector<std::int64_t> ids;
    std::vector<std::string> frames;
    for (const auto& e : events) {
      ids.push_back(e->id);
      frames.push_back(e->sse);
    }
    CHECK(ids == r.ids);
    CHECK(frames == r.frames);
  }
}

TEST_CASE("log_codec: verbatim records (earlier versions) decode into their events") {
  const auto f = make_event_frame(5, event_type::tool_result, "r", {{"tool_call_id", "c"}, {"output", "x"}, {"exit_code", 0}});
  const std::string row = "t" + std::to_string(f.sse.size()) + "\n" + f.sse + "rr\nftoken ,\"content\":\"b\"}\n";
  const auto events = decode_log_frames(row, 5);
  REQUIRE(events.size() == 2);
  CHECK(events[0]->sse == f.sse);
  CHECK(events[0]->type == event_type::tool_result);
  CHECK(events[0]->run_id() == "r");
  CHECK(events[1]->sse == make_event_frame(6, event_type::token, "r", "content", "b").sse);
}

TEST_CASE("log_codec: a malformed row is a store_error") {
  // Earlier versions' plain text too: a frame without its data, or of no known type, is no event.
  const char* rows[] = {"ftoken no newline",
                        "x what\n",
                        "t99\nshort",
                        "tabc\nxyz",
                        "ftoken_without_space\n",
                        "fnot_a_type ,\"x\":1}\n",
                        "id: 3\nevent: token",
                        "id: 9\nevent: x\ndata: {}\n\n"};
  for (const char* r : rows) {
    CAPTURE(r);
    CHECK_THROWS_AS(decode_log_frames(r, 1), agw::core::store_error);
  }
}

TEST_CASE("log_codec: a run is named again when only its source changes, and not after an event of no run") {
  const std::string run = "0b7e3c1a-5f2d-4c8b-9a6e-1d2f3a4b5c6d";
  const auto human = agw::core::event_source::human_agent;
  const std::vector<frame_ptr> frames{
      share(make_event_frame(1, event_type::token, run, "content", "a")),
      share(make_event_frame(2, event_type::token, run, "content", "b", human)),
      share(make_event_frame(3, event_type::token, "", "content", "no run")),
      share(make_event_frame(4, event_type::token, run, "content", "c", human)),
      share(make_event_frame(5, event_type::token, run, "content", "d")),
  };
  const auto row = encode_log_frames(frames);
  CHECK(row == "r" + run + "\nftoken ,\"content\":\"a\"}\n" +                                     //
                   "r" + run + " human_agent\nftoken ,\"content\":\"b\"}\n" +                     // the source alone changed
                   "dtoken {\"run_id\":\"\",\"source\":\"ai_agent\",\"content\":\"no run\"}\n" +  //
                   "ftoken ,\"content\":\"c\"}\n" +  // the same run and source: not named again
                   "r" + run + "\nftoken ,\"content\":\"d\"}\n");
  const auto back = decode_log_frames(row, 1);
  REQUIRE(back.size() == frames.size());
  for (std::size_t i = 0; i < frames.size(); ++i) CHECK(back[i]->sse == frames[i]->sse);
}

TEST_CASE("log_codec: events logged before sources read as the agent's; other sources are named with the run") {
  // A row as written before sources: the run, then records without a source.
  const auto old = decode_log_frames("rr\nftoken ,\"content\":\"a\"}\n", 3);
  REQUIRE(old.size() == 1);
  CHECK(old[0]->data() == R"({"run_id":"r","source":"ai_agent","content":"a"})");
  const auto text = decode_log_frames("id: 4\nevent: token\ndata: {\"run_id\":\"r\",\"content\":\"b\"}\n\n", 4);
  REQUIRE(text.size() == 1);
  CHECK(text[0]->data() == R"({"run_id":"r","source":"ai_agent","content":"b"})");
  // An old row with an empty run id is data without a run, kept as it is.
  const auto no_run = decode_log_frames("id: 6\nevent: token\ndata: {\"run_id\":\"\",\"content\":\"x\"}\n\n", 6);
  REQUIRE(no_run.size() == 1);
  CHECK(no_run[0]->run_id().empty());
  CHECK(no_run[0]->data() == R"({"run_id":"","content":"x"})");
  // One whose source member is there but empty keeps it empty (not the agent's).
  const auto empty_source = decode_log_frames("id: 7\nevent: token\ndata: {\"run_id\":\"r\",\"source\":\"\",\"x\":1}\n\n", 7);
  REQUIRE(empty_source.size() == 1);
  CHECK(empty_source[0]->data() == R"({"run_id":"r","source":"","x":1})");
  CHECK(encode_log_frames(empty_source) == "rr \nftoken ,\"x\":1}\n");
  // A lead that does not split (its source's quote unclosed) is kept as data without a run.
  const auto odd = decode_log_frames("id: 5\nevent: token\ndata: {\"run_id\":\"r\",\"source\":\"ai_ag\n\n", 5);
  REQUIRE(odd.size() == 1);
  CHECK(odd[0]->run_id().empty());
  CHECK(odd[0]->data() == R"({"run_id":"r","source":"ai_ag)");

  // The agent's events are stored exactly as before; an operator's name their source once.
  const std::vector<frame_ptr> frames{
      std::make_shared<const event_frame>(make_event_frame(1, event_type::token, "a", "content", "x")),
      std::make_shared<const event_frame>(
          make_event_frame(2, event_type::token, "h", "content", "y", agw::core::event_source::human_agent)),
      std::make_shared<const event_frame>(
          make_event_frame(3, event_type::done, "h", boost::json::object{}, agw::core::event_source::human_agent)),
  };
  const auto row = encode_log_frames(frames);
  CHECK(row == "ra\nftoken ,\"content\":\"x\"}\nrh human_agent\nftoken ,\"content\":\"y\"}\nfdone }\n");
  const auto back = decode_log_frames(row, 1);
  REQUIRE(back.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) CHECK(back[i]->sse == frames[i]->sse);
}
