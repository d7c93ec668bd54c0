#include "core/services/message_service.hpp"

#include <boost/asio/use_awaitable.hpp>

#include "core/api_error.hpp"
#include "core/projection.hpp"
#include "core/services/session_service.hpp"
#include "core/store_executor.hpp"

namespace agw::core {

namespace net = boost::asio;

message_service::message_service(store_executor& store, session_service& sessions) : store_(store), sessions_(sessions) {}

net::awaitable<message_list> message_service::list(std::string session_id, std::int64_t limit, std::int64_t offset) {
  auto finding = sessions_.require(std::move(session_id));
  auto session = co_await std::move(finding);
  auto read = [id = session.id, limit, offset](store_connection& c) { return c.list_messages(id, limit, offset); };
  message_list out;
  out.page = co_await store_.async_read(std::move(read), net::use_awaitable);
  out.has_more = offset + static_cast<std::int64_t>(out.page.messages.size()) < out.page.total;
  co_return out;
}

net::awaitable<std::int64_t> message_service::rebuild(std::string session_id) {
  auto finding = sessions_.require(std::move(session_id));
  auto session = co_await std::move(finding);
  auto rebuild = [id = session.id](store_connection& c) { return rebuild_projection(c, id); };
  auto count = co_await store_.async_write(std::move(rebuild), net::use_awaitable);
  // Deleted between the lookup and the write.
  if (!count) throw api_error(error_code::not_found, "no such session");
  co_return *count;
}

}  // namespace agw::core
