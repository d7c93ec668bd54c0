#include "core/completion_inbox.hpp"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <iterator>
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
  // On the context's thread: a free strand runs its completion here and now. At least one
  // runs; past the slice, the rest goes back to the front and this handler to the back.
  const auto until = std::chrono::steady_clock::now() + slice;
  std::size_t ran = 0;
  while (ran < items.size()) {
    auto& [strand, fn] = items[ran++];
    net::dispatch(strand, std::move(fn));
    if (ran < items.size() && std::chrono::steady_clock::now() >= until) break;
  }
  {
    std::lock_guard lock(mutex_);
    if (shut_) return;  // what is left goes with `items`, as it would have with the context
    waiting_.insert(waiting_.begin(), std::make_move_iterator(items.begin() + static_cast<std::ptrdiff_t>(ran)),
                    std::make_move_iterator(items.end()));
    // One take() at a time (queued or running), so items run in the order they came
    // whichever thread runs the context: hand-overs meanwhile only added to waiting_.
    posted_ = !waiting_.empty();
    if (!posted_) return;
  }
  net::post(context_, [this] { take(); });
}

void completion_inbox::hand_over(std::vector<item> items) {
  if (items.empty()) return;
  bool post = false;
  {
    std::lock_guard lock(mutex_);
    if (shut_) return;  // `items` go with this call, as a post to a shut context would
    if (waiting_.empty())
      waiting_ = std::move(items);
    else
      for (auto& i : items) waiting_.push_back(std::move(i));
    // Only when no take() is queued or running: that one takes these too (or posts
    // again for them).
    post = !std::exchange(posted_, true);
  }
  if (post) net::post(context_, [this] { take(); });
}

}  // namespace agw::core
