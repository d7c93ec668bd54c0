#pragma once
// The outbox row of an event webhook (docs/sessions.md, "Event webhooks"): a batch of
// a session's committed events, in id order, with their ids for the receiver to
// de-duplicate on. Also the session.expired notice. Pure functions.
#include <cstdint>
#include <string>
#include <vector>

#include "core/events/event_frame.hpp"
#include "core/store_records.hpp"

namespace agw::core {

// At most this many events per delivery: one delivery stays a small POST.
inline constexpr std::size_t max_events_per_delivery = 100;

// {"type":"session.events","session_id","first_event_id","last_event_id",
//  "events":[{"id","event","data"}]}; `events` non-empty, in id order.
webhook_delivery_record make_event_batch_delivery(const std::string& session_id, const std::string& url,
                                                  const std::vector<frame_ptr>& events, std::int64_t now_ms);

// {"type":"session.expired","session_id","expired_at"}: written with the expiry (as a
// session notice: the session's own outbox rows go with it).
webhook_delivery_record make_session_expired_delivery(const std::string& session_id, const std::string& url, std::int64_t now_ms);

}  // namespace agw::core
