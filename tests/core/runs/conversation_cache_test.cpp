#include "core/runs/conversation_cache.hpp"

#include <doctest/doctest.h>

namespace {

using agw::core::conversation_cache;
using agw::core::conversation_state;

conversation_cache::entry conversation(std::int64_t version, std::size_t messages, std::size_t content_bytes = 10) {
  conversation_cache::entry e;
  e.version = version;
  for (std::size_t i = 0; i < messages; ++i) {
    agw::core::message_record m;
    m.id = "m" + std::to_string(i);
    m.content = std::string(content_bytes, 'x');
    e.state.messages.push_back(m);
  }
  return e;
}

}  // namespace

TEST_CASE("conversation_cache: a taken entry is gone until given back; giving back replaces") {
  conversation_cache cache;
  CHECK_FALSE(cache.take("s"));
  cache.give_back("s", conversation(3, 2));
  CHECK(cache.size() == 1);
  CHECK(cache.bytes() == conversation_cache::estimate_bytes(conversation(3, 2).state));
  auto e = cache.take("s");
  REQUIRE(e);
  CHECK(e->version == 3);
  CHECK(e->state.messages.size() == 2);
  CHECK_FALSE(cache.take("s"));
  CHECK(cache.size() == 0);
  CHECK(cache.bytes() == 0);
  cache.give_back("s", conversation(4, 1));
  cache.give_back("s", conversation(5, 3));
  CHECK(cache.size() == 1);
  CHECK(cache.take("s")->version == 5);
}

TEST_CASE("conversation_cache: past its budget the least recently given back go first; one too large is not kept") {
  const auto one = conversation_cache::estimate_bytes(conversation(1, 4).state);
  conversation_cache cache(3 * one);
  for (const char* id : {"a", "b", "c"}) cache.give_back(id, conversation(1, 4));
  CHECK(cache.size() == 3);
  cache.give_back("a", conversation(2, 4));  // "a" is now the newest
  cache.give_back("d", conversation(1, 4));  // "b" goes
  CHECK(cache.size() == 3);
  CHECK(cache.bytes() <= 3 * one);
  CHECK_FALSE(cache.take("b"));
  CHECK(cache.take("a")->version == 2);
  cache.give_back("huge", conversation(1, 4, 4 * one));
  CHECK_FALSE(cache.take("huge"));
  CHECK(cache.take("c"));
  CHECK(cache.take("d"));
}
