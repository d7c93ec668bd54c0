// gateway/encodings/shared_encoding: every frame of a run is encoded once per encoding,
// however many streams follow it and in whatever interleaving; a stream that starts
// behind the window encodes on its own; one that falls behind it is lost; and the
// bytes are those of a stream's own encoder.
#include "gateway/encodings/shared_encoding.hpp"

#include <doctest/doctest.h>

#include <boost/json/parse.hpp>
#include <string>
#include <vector>

#include "core/events/sse_format.hpp"
#include "gateway/encodings/ag_ui_encoder.hpp"

namespace {

namespace json = boost::json;
using agw::core::event_frame;
using agw::core::event_type;
using agw::core::make_event_frame;
using agw::gateway::encoded_run;
using agw::gateway::frame_encoder;
using agw::gateway::shared_frame_encoder;

// Counts its calls; its bytes say which frame and how many frames it saw before (its state).
struct counting_encoder final : frame_encoder {
  explicit counting_encoder(int& calls) : calls(calls) {}
  void encode(const event_frame& frame, std::string& out) override {
    ++calls;
    out += std::to_string(frame.id) + "/" + std::to_string(seen++) + ";";
  }
  int& calls;
  int seen = 0;
};

event_frame token(std::int64_t id) { return make_event_frame(id, event_type::token, "R", json::object{{"content", "x"}}); }

std::string expected(std::int64_t from, std::int64_t to) {
  std::string out;
  for (auto id = from; id <= to; ++id) out += std::to_string(id) + "/" + std::to_string(id - from) + ";";
  return out;
}

}  // namespace

TEST_CASE("100 streams of one run: each frame is encoded once, each stream gets every frame's bytes") {
  int calls = 0;
  auto run = std::make_shared<encoded_run>([&calls] { return std::make_unique<counting_encoder>(calls); });
  std::vector<std::unique_ptr<shared_frame_encoder>> streams;
  for (int i = 0; i < 100; ++i) streams.push_back(std::make_unique<shared_frame_encoder>(run));
  std::vector<std::string> out(streams.size());
  std::vector<event_frame> frames;
  for (std::int64_t id = 1; id <= 50; ++id) frames.push_back(token(id));
  // Uneven progress: stream i is i % 7 frames behind the leader at each step.
  for (std::size_t step = 0; step < frames.size() + 7; ++step)
    for (std::size_t s = 0; s < streams.size(); ++s) {
      const std::size_t lag = s % 7;
      if (step >= lag && step - lag < frames.size()) streams[s]->encode(frames[step - lag], out[s]);
    }
  CHECK(calls == 50);  // (the factory's encoder is the head: no other encoder was made)
  for (const auto& o : out) CHECK(o == expected(1, 50));
  for (const auto& s : streams) CHECK(s->sharing());
}

TEST_CASE("a stream that starts behind the window encodes with its own encoder, from the run's start") {
  int calls = 0;
  auto run = std::make_shared<encoded_run>([&calls] { return std::make_unique<counting_encoder>(calls); }, 1 << 20, 4);
  shared_frame_encoder leader(run);
  std::string led;
  for (std::int64_t id = 1; id <= 10; ++id) leader.encode(token(id), led);
  CHECK(led == expected(1, 10));
  shared_frame_encoder late(run);  // e.g. GET /chat/stream while the run is at event 10
  std::string got;
  for (std::int64_t id = 1; id <= 10; ++id) late.encode(token(id), got);
  CHECK(got == expected(1, 10));
  CHECK_FALSE(late.sharing());
  CHECK(calls == 20);
}

TEST_CASE("a sharing stream that falls behind the window is lost and gets nothing more") {
  int calls = 0;
  auto run = std::make_shared<encoded_run>([&calls] { return std::make_unique<counting_encoder>(calls); }, 1 << 20, 4);
  shared_frame_encoder fast(run), slow(run);
  std::string f, s;
  slow.encode(token(1), s);
  for (std::int64_t id = 1; id <= 10; ++id) fast.encode(token(id), f);
  CHECK_FALSE(slow.lost());
  slow.encode(token(2), s);  // 2 left the 4-frame window
  CHECK(slow.lost());
  CHECK(s == expected(1, 1));
  CHECK(calls == 10);
}

TEST_CASE("over keep_bytes, the frames every stream has passed leave the window; a lagging stream keeps them") {
  int calls = 0;
  auto make = [&calls] { return std::make_unique<counting_encoder>(calls); };
  // keep_bytes 20: about four frames' bytes ("12/11;").
  auto run = std::make_shared<encoded_run>(make, 1 << 20, 1000, 20);
  {
    shared_frame_encoder alone(run);
    std::string out;
    for (std::int64_t id = 1; id <= 100; ++id) alone.encode(token(id), out);
    CHECK(out == expected(1, 100));
    CHECK(run->held_bytes() <= 20 + 8);  // one stream: nothing waits for anyone
  }
  auto second = std::make_shared<encoded_run>(make, 1 << 20, 1000, 20);
  shared_frame_encoder fast(second), slow(second);
  std::string f, s;
  slow.encode(token(1), s);
  for (std::int64_t id = 1; id <= 100; ++id) fast.encode(token(id), f);
  CHECK(second->held_bytes() > 300);  // frames 2..100 wait for the slow stream
  for (std::int64_t id = 2; id <= 100; ++id) slow.encode(token(id), s);
  CHECK(s == f);
  CHECK_FALSE(slow.lost());
  fast.encode(token(101), f);  // the next frame lets go of what both passed
  CHECK(second->held_bytes() <= 20 + 8);
}

TEST_CASE("the window is bounded by bytes too; the newest frame always stays") {
  int calls = 0;
  auto run = std::make_shared<encoded_run>([&calls] { return std::make_unique<counting_encoder>(calls); }, 1, 100);
  shared_frame_encoder a(run), b(run);
  std::string x, y;
  a.encode(token(1), x);
  b.encode(token(1), y);  // the newest frame: still there
  CHECK(x == y);
  a.encode(token(2), x);
  b.encode(token(2), y);
  CHECK(x == y);
  CHECK(calls == 2);
}

TEST_CASE("shared_encoder: streams with the same key share one encoding; another key, another") {
  int calls = 0;
  auto make = [&calls] { return std::make_unique<counting_encoder>(calls); };
  auto a = agw::gateway::shared_encoder("test\nrun-1", make);
  auto b = agw::gateway::shared_encoder("test\nrun-1", make);
  auto c = agw::gateway::shared_encoder("test\nrun-2", make);
  std::string out;
  for (auto* e : {a.get(), b.get(), c.get()}) e->encode(token(1), out);
  CHECK(calls == 2);
  a.reset();
  b.reset();
  auto d = agw::gateway::shared_encoder("test\nrun-1", make);  // run-1's streams ended: a new encoding
  d->encode(token(1), out);
  CHECK(calls == 3);
}

TEST_CASE("AG-UI through the shared encoding: the same bytes as a stream's own encoder") {
  std::vector<event_frame> frames = {
      make_event_frame(1, event_type::status, "R", json::object{{"status", "thinking"}}),
      make_event_frame(2, event_type::token, "R", json::object{{"content", "Hi"}}),
      make_event_frame(3, event_type::token, "R", json::object{{"content", " there"}}),
      make_event_frame(4, event_type::done, "R", json::object{{"assistant_data", json::object{}}}),
  };
  agw::gateway::ag_ui_encoder own("T", "C", "R");
  std::string alone;
  for (const auto& f : frames) own.encode(f, alone);
  auto run = std::make_shared<encoded_run>([] { return std::make_unique<agw::gateway::ag_ui_encoder>("T", "C", "R"); });
  shared_frame_encoder s1(run), s2(run);
  std::string o1, o2;
  for (const auto& f : frames) {
    s1.encode(f, o1);
    s2.encode(f, o2);
  }
  CHECK(o1 == alone);
  CHECK(o2 == alone);
}
