#include "core/completion_inbox.hpp"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <utility>

namespace agw::core {

namespace net = boost::asio;

net::io_context::id completion_inbox::id;

completion_inbox::completion_inbox(net::io_context& context) : net::io_context::service(context), context_(context) {}

completion_inbox& completion_inbox::of(net::io_context& context) { return net::use_service<completion_inbox>(context); }

completion_inbox* completion_inbox::of_local(const net::any_io_executor& executor) {
  const auto* strand = executor.target<io_strand>();
  if (!strand) return nullptr;
  auto& context = strand->get_inner_executor().context();
  return context.get_executor().running_in_this_thread() ? &of(context) : nullptr;
}

void completion_inbox::shutdown() {
  std::vector<item> left;
  {
    std::lock_guard lock(mutex_);
    shut_ = true;
    left.swap(waiting_);
  }
  // `left` goes here, with the context's other handlers, while its services still exist.
}

void completion_inbox::take() {
  std::vector<item> items;
  {
    std::lock_guard lock(mutex_);
    items.swap(waiting_);
  }
  // On the context's thread: a free strand runs its completion here and now.
  for (auto& [strand, fn] : items) net::dispatch(strand, std::move(fn));
}

void completion_inbox::hand_over(std::vector<item> items) {
  if (items.empty()) return;
  bool first = false;
  {
    std::lock_guard lock(mutex_);
    if (shut_) return;  // `items` go with this call, as a post to a shut context would
    first = waiting_.empty();
    if (first)
      waiting_ = std::move(items);
    else
      for (auto& i : items) waiting_.push_back(std::move(i));
  }
  // Only the first since the last take: the handler posted for it takes these too.
  if (first) net::post(context_, [this] { take(); });
}

}  // namespace agw::core
