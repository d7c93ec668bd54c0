#include "core/completion_inbox.hpp"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <chrono>

namespace agw::core {

namespace net = boost::asio;

net::io_context::id completion_inbox::id;

completion_inbox::completion_inbox(net::io_context& context)
    : net::io_context::service(context), context_(context), pass_(context) {}

completion_inbox& completion_inbox::of(net::io_context& context) { return net::use_service<completion_inbox>(context); }

void completion_inbox::expect_for(const net::any_io_executor& executor) {
  const auto* strand = executor.target<io_strand>();
  if (!strand) return;
  auto& context = strand->get_inner_executor().context();
  // Only on the context's own thread (checked before use_service, which takes the
  // context's service registry lock; one lock a journaled batch, uncontended).
  if (context.get_executor().running_in_this_thread()) of(context).expect();
}

void completion_inbox::shutdown() { pass_.cancel(); }

void completion_inbox::expect() {
  if (!context_.get_executor().running_in_this_thread()) return;
  if (armed_.load(std::memory_order_relaxed)) {
    again_ = true;
    return;
  }
  armed_.store(true, std::memory_order_seq_cst);
  arm();
}

void completion_inbox::arm() {
  // The next whole millisecond: where core/clock puts every timer's deadline, so this
  // one fires in a pass the thread makes anyway when any of its timers is due then.
  const auto now = std::chrono::steady_clock::now().time_since_epoch();
  const auto next = std::chrono::floor<std::chrono::milliseconds>(now) + std::chrono::milliseconds(1);
  pass_.expires_at(std::chrono::steady_clock::time_point(std::chrono::duration_cast<std::chrono::steady_clock::duration>(next)));
  pass_.async_wait([this](boost::system::error_code ec) {
    if (!ec) on_pass();
  });
}

void completion_inbox::on_pass() {
  // An outcome announced after this pass was armed may come after it: the next pass is
  // armed as well, and the flag stays up meanwhile.
  const bool again = std::exchange(again_, false);
  if (!again) armed_.store(false, std::memory_order_seq_cst);
  take();
  if (again) arm();
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
    if (waiting_.empty())
      waiting_ = std::move(items);
    else
      for (auto& i : items) waiting_.push_back(std::move(i));
  }
  // Read after adding, under the order the mutex gives: a pass that lowered the flag
  // takes under this mutex after lowering it, so either it finds these items or this
  // load sees the flag down and posts.
  if (!armed_.load(std::memory_order_seq_cst)) net::post(context_, [this] { take(); });
}

}  // namespace agw::core
