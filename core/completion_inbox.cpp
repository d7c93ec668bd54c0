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
  auto& context = strand->context();
  return context.get_executor().running_in_this_thread() ? &of(context) : nullptr;
}

void completion_inbox::shutdown() {
  std::vector<item> left;
  {
    std::lock_guard lock(mutex_);
    shut_ = true;
    left.swap(waiting_);
  }
  // These go here, with the context's other handlers, while its services still exist.
  left.clear();
  taken_.clear();
}

void completion_inbox::set_slice(std::chrono::microseconds slice) {
  std::lock_guard lock(mutex_);
  slice_ = slice;
}

void completion_inbox::take() {
  std::chrono::microseconds slice;
  {
    std::lock_guard lock(mutex_);
    for (auto& i : waiting_) taken_.push_back(std::move(i));
    waiting_.clear();
    slice = slice_;
  }
  // On the context's thread, the items' implicit strand: each runs here and now. At least one
  // runs; past the slice, the rest stays in taken_ and this handler goes to the back.
  const auto until = std::chrono::steady_clock::now() + slice;
  bool first = true;
  while (!taken_.empty() && (first || std::chrono::steady_clock::now() < until)) {
    first = false;
    auto [strand, fn] = std::move(taken_.front());
    taken_.pop_front();
    net::dispatch(strand, std::move(fn));
  }
  {
    std::lock_guard lock(mutex_);
    if (shut_) return;
    // One take() at a time (queued or running), so items run in the order they came
    // whichever thread runs the context: hand-overs meanwhile only added to waiting_.
    posted_ = !taken_.empty() || !waiting_.empty();
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
