#include "core/completion_inbox.hpp"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <utility>

namespace agw::core {

namespace net = boost::asio;

net::io_context::id completion_inbox::id;

completion_inbox::completion_inbox(net::io_context& context)
    : net::io_context::service(context), context_(context), pass_(context) {}

completion_inbox& completion_inbox::of(net::io_context& context) { return net::use_service<completion_inbox>(context); }

completion_inbox* completion_inbox::of_local(const net::any_io_executor& executor) {
  const auto* strand = executor.target<io_strand>();
  if (!strand) return nullptr;
  auto& context = strand->get_inner_executor().context();
  return context.get_executor().running_in_this_thread() ? &of(context) : nullptr;
}

void completion_inbox::shutdown() {
  pass_.cancel();
  std::vector<item> left;
  {
    std::lock_guard lock(mutex_);
    shut_ = true;
    left.swap(waiting_);
  }
  // `left` goes here, with the context's other handlers, while its services still exist.
}

void completion_inbox::expect() {
  if (!context_.get_executor().running_in_this_thread()) return;
  if (armed_.load(std::memory_order_relaxed)) {
    again_ = true;
    return;
  }
  // Only a pass the thread makes anyway: with none of its timers due soon, the outcome
  // is posted, and wakes the thread once, as before.
  const auto at = timer_grains::next_marked(std::chrono::steady_clock::now(), pass_window);
  if (!at) return;
  arm(*at);  // first: if it throws, no flag is up without a pass behind it
  armed_.store(true, std::memory_order_seq_cst);
}

void completion_inbox::arm(steady_time at) {
  pass_.expires_at(at);
  pass_.async_wait([this](boost::system::error_code ec) {
    if (!ec) on_pass();
  });
}

void completion_inbox::on_pass() {
  // An outcome announced after this pass was armed may come after it: the flag stays up
  // through the next pass the thread makes, if one is due soon. Armed (or lowered)
  // before the completions run, so that one that throws leaves no flag up without a
  // pass behind it.
  std::optional<steady_time> next;
  if (std::exchange(again_, false)) next = timer_grains::next_marked(std::chrono::steady_clock::now(), pass_window);
  if (next)
    arm(*next);
  else
    armed_.store(false, std::memory_order_seq_cst);
  take();
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
  {
    std::lock_guard lock(mutex_);
    if (shut_) return;  // `items` go with this call, as a post to a shut context would
    if (waiting_.empty())
      waiting_ = std::move(items);
    else
      for (auto& i : items) waiting_.push_back(std::move(i));
  }
  // Read after adding, under the order the mutex gives: a pass that lowered the flag
  // takes under this mutex after lowering it, so either it finds these items or this
  // load sees the flag down and posts (or up again, raised by a later expect() whose
  // pass is still to come and will find them).
  if (!armed_.load(std::memory_order_seq_cst)) net::post(context_, [this] { take(); });
}

}  // namespace agw::core
