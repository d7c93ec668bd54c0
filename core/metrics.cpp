#include "core/metrics.hpp"

namespace agw::core {

std::size_t request_counts::slot_of(unsigned status) noexcept {
  for (std::size_t i = 0; i < statuses.size(); ++i)
    if (statuses[i] == status) return i;
  return other_status;
}

}  // namespace agw::core
