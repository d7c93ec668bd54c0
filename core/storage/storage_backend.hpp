#pragma once
// What a store hands to core when a process starts: the executor that runs every
// storage job on the store's own threads, and the writer the live event pipeline
// makes events durable through. The gateway passes it on without knowing either.
#include "core/storage/event_log_writer.hpp"
#include "core/store_executor.hpp"

namespace agw::core {

struct storage_backend {
  store_executor& store;
  event_log_writer& events;
};

}  // namespace agw::core
