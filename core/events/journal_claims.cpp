#include "core/events/journal_claims.hpp"

#include <algorithm>

namespace agw::core {

std::shared_ptr<journal_claims::claim> journal_claims::make_claim() {
  auto c = std::make_shared<claim>();
  std::lock_guard lock(mutex_);
  claims_.push_back(c);
  return c;
}

std::optional<std::int64_t> journal_claims::oldest() const {
  std::optional<std::int64_t> out;
  std::lock_guard lock(mutex_);
  std::erase_if(claims_, [&](const std::weak_ptr<claim>& w) {
    auto c = w.lock();
    if (!c) return true;
    if (auto seq = c->oldest(); seq && (!out || *seq < *out)) out = seq;
    return false;
  });
  return out;
}

}  // namespace agw::core
