#include "core/file_offset_clock.hpp"

#include <fstream>

namespace agw::core {

wall_time file_offset_clock::wall_now() const {
  long long offset_ms = 0;
  std::ifstream in(path_);
  if (!(in >> offset_ms)) offset_ms = 0;
  return base_.wall_now() + std::chrono::milliseconds(offset_ms);
}

}  // namespace agw::core
