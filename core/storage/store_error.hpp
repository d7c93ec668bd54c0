#pragma once
// Storage failed (disk, I/O, corruption, busy past the timeout): the API answers 503.
#include <stdexcept>

namespace agw::core {

class store_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace agw::core
