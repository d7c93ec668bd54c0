#pragma once
// Port: the Idempotency-Keys of POST /messages and the run each one started.
// Used on a store connection's thread only; throws store_error.
#include <cstdint>
#include <optional>
#include <string_view>

#include "core/store_records.hpp"

namespace agw::core {

class idempotency_keys {
 public:
  virtual ~idempotency_keys() = default;
  virtual std::optional<idempotency_record> find_idempotency_key(std::string_view session_id, std::string_view key) = 0;
  virtual void insert_idempotency_key(const idempotency_record& r) = 0;
  virtual void purge_idempotency_keys(std::int64_t older_than_ms) = 0;
};

}  // namespace agw::core
