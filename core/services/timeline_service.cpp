#include "core/services/timeline_service.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/api_error.hpp"
#include "core/checkpoint.hpp"
#include "core/clock.hpp"
#include "core/ids.hpp"
#include "core/projection.hpp"
#include "core/runs/conversation_cache.hpp"
#include "core/runs/run.hpp"
#include "core/runs/run_reservation.hpp"
#include "core/runs/session_channel.hpp"
#include "core/session_hub.hpp"
#include "core/store_executor.hpp"

namespace agw::core {

namespace net = boost::asio;

namespace {

// The operator's text as tokens, the way the mock streams a message: words, each after
// the first with the whitespace before it, so they concatenate back to the text.
std::vector<std::string> words_of(const std::string& text) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < text.size()) {
    auto word = text.find_first_not_of(" \t\r\n\f\v", at);
    if (word == std::string::npos) break;
    auto end = text.find_first_of(" \t\r\n\f\v", word);
    if (end == std::string::npos) end = text.size();
    out.push_back(text.substr(out.empty() ? word : at, end - (out.empty() ? word : at)));
    at = end;
  }
  return out;
}

}  // namespace

timeline_service::timeline_service(store_executor& store, session_hub& hub, std::shared_ptr<conversation_cache> conversations,
                                   const clock& time)
    : store_(store), hub_(hub), conversations_(std::move(conversations)), clock_(time) {}

net::awaitable<std::int64_t> timeline_service::append_custom(session_record session, custom_event event) {
  auto channel = hub_.channel(session);
  auto append = [channel, event = std::move(event)]() -> net::awaitable<std::int64_t> {
    // An event of no run takes no lease (docs/scale-out.md, "Events of no run"): on a
    // cluster the channel first takes on what other nodes wrote, so that it numbers on
    // from the log's end rather than from what it last heard. (Narrows the race; the
    // session routing is what makes it safe.)
    if (!channel->live_run()) {
      auto catching_up = channel->follow_log_end();
      co_await std::move(catching_up);
    }
    boost::json::object data{{"data", event.data}};
    const auto id = channel->publish_outside_run(event_type::custom, event.source, data);
    // The id is answered only once durable: a crash cannot take it back and hand it out again.
    auto committing = channel->wait_committed();
    co_await std::move(committing);
    co_return id;
  };
  auto appending = net::co_spawn(channel->strand(), append(), net::use_awaitable);
  co_return co_await std::move(appending);
}

net::awaitable<operator_reply> timeline_service::post_operator_message(session_record session, operator_message message) {
  auto channel = hub_.channel(session);
  auto reserving = reserve(channel, clock_, message.source);
  auto reserved = co_await std::move(reserving);
  if (!reserved.created) {
    boost::json::object where{{"run_id", reserved.live_run_id}, {"stream_url", "/sessions/" + session.id + "/events"}};
    throw api_error(error_code::run_in_progress, "a run is live on this session: abort it before answering", std::move(where));
  }
  auto r = reserved.created;
  message_record answer;
  answer.id = new_uuid();
  answer.session_id = session.id;
  answer.role = "assistant";
  answer.content = message.content;
  answer.source = std::string(name_of(message.source));
  answer.created_at_ms = clock_.wall_ms();
  std::shared_ptr<conversation_cache::entry> cached;
  if (auto kept = conversations_->take(session.id)) cached = std::make_shared<conversation_cache::entry>(std::move(*kept));
  auto persist = [session, answer, cached, &time = clock_](store_connection& c) mutable {
    auto newest = newest_conversation(c, session, cached.get());
    auto& messages = newest.state.messages;
    // It answers the newest customer message, as an agent's answer would.
    for (auto it = messages.rbegin(); it != messages.rend(); ++it)
      if (it->role == "user") {
        answer.parent_id = it->id;
        break;
      }
    answer.seq = static_cast<std::int64_t>(messages.size() + 1);
    messages.push_back(answer);
    save_checkpoint(c, time, session, ++newest.version, newest.state, messages.size() - 1);
    return newest;
  };
  std::exception_ptr failure;
  stored_conversation saved;
  try {
    saved = co_await store_.async_write(std::move(persist), net::use_awaitable);
  } catch (...) {
    failure = std::current_exception();
  }
  if (failure) {
    auto releasing = release(channel, r);
    co_await std::move(releasing);
    std::rethrow_exception(failure);
  }
  const auto stored = saved.state.messages.back();
  conversations_->give_back(session.id, {saved.version, std::move(saved.state)});
  auto announce = [channel, r, stored, stream = message.stream]() -> net::awaitable<void> {
    const auto from = r->source();
    // As for a custom event: number on from the log's end (another node may have written).
    auto catching_up = channel->follow_log_end();
    co_await std::move(catching_up);
    if (stream) {
      // Like an agent's answer: clients that render runs render this one.
      for (const auto& token : words_of(stored.content)) channel->publish(r->id(), event_type::token, "content", token, from);
      boost::json::object done{{"assistant_data", message_json(stored)}};
      channel->publish(r->id(), event_type::done, done, from);
    } else {
      boost::json::object data{{"message", message_json(stored)}};
      channel->publish_outside_run(event_type::message, from, data);
    }
    auto committing = channel->wait_committed();
    co_await std::move(committing);
    if (channel->live_run() == r) channel->set_live_run(nullptr);
  };
  auto announcing = net::co_spawn(channel->strand(), announce(), net::use_awaitable);
  co_await std::move(announcing);
  co_return operator_reply{stored, r->id()};
}

}  // namespace agw::core
