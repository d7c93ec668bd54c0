#pragma once
// Opaque ids: time-ordered (v7) UUIDs in canonical lower-case text form: 74 random
// bits, and the time first so that rows keyed by them are stored in creation order.
#include <string>
#include <string_view>

namespace agw::core {

// Thread-safe: each thread draws from its own generator.
std::string new_uuid();
// True for the canonical 36-character form; anything else cannot name a stored row.
bool is_uuid(std::string_view text);

}  // namespace agw::core
