#pragma once
// Port: "one node at a time" for periodic sweeps (the TTL sweep) when several
// processes share a store. Used inside a write job, on a store connection's thread
// only; throws store_error.
#include <string_view>

namespace agw::core {

class sweep_lock {
 public:
  virtual ~sweep_lock() = default;
  // Whether this job may run `task`'s pass now: true for one job at a time across every
  // process on the store, until its transaction ends (PostgreSQL: a transaction-level
  // advisory lock, released at commit or rollback, no bookkeeping). false: another node
  // runs that pass right now; skip it (the next interval looks again). A single-process
  // store (SQLite) always answers true.
  virtual bool try_lead(std::string_view task) = 0;
};

}  // namespace agw::core
