#pragma once
// Opaque ids: random (v4) UUIDs in canonical lower-case text form.
#include <string>
#include <string_view>

namespace agw::core {

// Thread-safe: each thread draws from its own generator.
std::string new_uuid();
// True for the canonical 36-character form; anything else cannot name a stored row.
bool is_uuid(std::string_view text);

}  // namespace agw::core
