#include "core/completion_fanout.hpp"

#include <boost/asio/post.hpp>

#include "core/completion_inbox.hpp"

namespace agw::core {

namespace net = boost::asio;

void completion_fanout::add(const net::any_io_executor& executor, std::function<void()> fn) {
  const auto* strand = executor.target<io_strand>();
  if (!strand) {
    others_.emplace_back(executor, std::move(fn));
    return;
  }
  const auto context = *strand;
  for (auto& g : groups_)
    if (g.context == context) {
      g.items.emplace_back(*strand, std::move(fn));
      return;
    }
  groups_.push_back({context, {}});
  groups_.back().items.emplace_back(*strand, std::move(fn));
}

void completion_fanout::hand_over_all() {
  for (auto& g : groups_) completion_inbox::of(g.context.context()).hand_over(std::move(g.items));
  groups_.clear();
  for (auto& [executor, fn] : others_) net::post(executor, std::move(fn));
  others_.clear();
}

}  // namespace agw::core
