#pragma once
// Storage failed (disk, I/O, corruption, busy past the timeout): the API answers 503.
#include <stdexcept>

namespace agw::core {

class store_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An event batch written with a fencing token that no longer holds the session's run
// lease (core/storage/run_leases.hpp): another node took the run over. Nothing was
// written; retrying cannot succeed.
class fenced_out : public store_error {
 public:
  using store_error::store_error;
};

}  // namespace agw::core
