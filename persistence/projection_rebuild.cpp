#include "persistence/projection_rebuild.hpp"

#include <cstdio>

#include "core/projection.hpp"

namespace agw::persistence {

int rebuild_offline(sqlite_store& store, const std::optional<std::string>& session_id) {
  std::vector<std::string> ids = session_id ? std::vector<std::string>{*session_id} : store.all_session_ids();
  int failures = 0;
  for (const auto& id : ids) {
    store.begin_batch();
    try {
      auto count = core::rebuild_projection(store, id);
      store.commit_batch();
      if (!count) {
        std::fprintf(stderr, "session %s: not found\n", id.c_str());
        ++failures;
        continue;
      }
      std::printf("session %s: %lld messages\n", id.c_str(), static_cast<long long>(*count));
    } catch (const std::exception& e) {
      store.rollback_batch();
      std::fprintf(stderr, "session %s: %s\n", id.c_str(), e.what());
      ++failures;
    }
  }
  return failures ? 1 : 0;
}

}  // namespace agw::persistence
