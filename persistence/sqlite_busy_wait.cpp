#include "persistence/sqlite_busy_wait.hpp"

#include <thread>

namespace agw::persistence {

void sqlite_busy_wait::install(sqlite3* db) { sqlite3_busy_handler(db, &sqlite_busy_wait::on_busy, this); }

std::chrono::microseconds sqlite_busy_wait::step_after(std::chrono::steady_clock::duration waited) {
  using namespace std::chrono_literals;
  if (waited < 2ms) return 50us;
  if (waited < 50ms) return 250us;
  return 1000us;
}

int sqlite_busy_wait::on_busy(void* self, int tries) {
  auto& wait = *static_cast<sqlite_busy_wait*>(self);
  const auto now = std::chrono::steady_clock::now();
  if (tries == 0 || now - wait.last_call_ > new_wait_gap) wait.began_ = now;
  wait.last_call_ = now;
  const auto waited = now - wait.began_;
  if (waited >= wait.limit_) return 0;
  std::this_thread::sleep_for(step_after(waited));
  return 1;
}

}  // namespace agw::persistence
