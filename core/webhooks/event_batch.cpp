#include "core/webhooks/event_batch.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "core/ids.hpp"
#include "core/time_format.hpp"

namespace agw::core {

namespace {

// A pending outbox row for `payload`, due now, with fresh ids.
webhook_delivery_record new_delivery(const std::string& session_id, const std::string& url, const boost::json::object& payload,
                                     std::int64_t now_ms) {
  webhook_delivery_record d;
  d.id = new_uuid();
  d.webhook_id = "msg_" + new_uuid();
  d.session_id = session_id;
  d.url = url;
  d.payload = boost::json::serialize(payload);
  d.next_attempt_at_ms = now_ms;
  d.created_at_ms = now_ms;
  return d;
}

}  // namespace

webhook_delivery_record make_event_batch_delivery(const std::string& session_id, const std::string& url,
                                                  const std::vector<frame_ptr>& events, std::int64_t now_ms) {
  boost::json::array list;
  for (const auto& f : events) {
    boost::json::error_code ec;
    auto data = boost::json::parse(f->data(), ec);
    if (ec) data = boost::json::object{};  // never: frames are built from JSON objects
    list.push_back(boost::json::object{{"id", f->id}, {"event", f->type_name()}, {"data", std::move(data)}});
  }
  boost::json::object payload{{"type", "session.events"},
                              {"session_id", session_id},
                              {"first_event_id", events.front()->id},
                              {"last_event_id", events.back()->id},
                              {"events", std::move(list)}};
  auto d = new_delivery(session_id, url, payload, now_ms);
  d.event_first_id = events.front()->id;
  return d;
}

webhook_delivery_record make_session_expired_delivery(const std::string& session_id, const std::string& url,
                                                      std::int64_t now_ms) {
  boost::json::object payload{{"type", "session.expired"}, {"session_id", session_id}, {"expired_at", format_rfc3339_ms(now_ms)}};
  return new_delivery(session_id, url, payload, now_ms);
}

}  // namespace agw::core
