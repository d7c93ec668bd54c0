#include "core/commit_pacer.hpp"

#include <thread>

namespace agw::core {

commit_pacer::commit_pacer(std::chrono::microseconds interval) : interval_(interval), last_commit_(clock::now() - interval) {}

bool commit_pacer::wait_turn(std::unique_lock<std::mutex>& lock, std::condition_variable& ready,
                             const std::function<bool()>& queued, const std::function<bool()>& stopping,
                             const std::function<bool()>& hurry) {
  const auto due = last_commit_ + interval_;
  if (!stopping() && !queued() && dense_ && clock::now() < due) {
    // The next commit may not start before `due` anyway: under a dense load sleep until
    // then and look, rather than wait to be woken by the next job and then sleep again.
    lock.unlock();
    std::this_thread::sleep_until(due);
    lock.lock();
    // Nothing came by then: the load is sparse, and looking would cost a wake per commit.
    if (!queued()) dense_ = false;
  }
  if (!stopping() && !queued()) {
    ready.wait(lock, [&] { return stopping() || queued(); });
    // A job came before the due time, so a look at `due` would have found it: look next time.
    dense_ = clock::now() < due;
  }
  if (!queued()) return false;  // stopping and drained
  if (!stopping() && !(hurry && hurry()) && clock::now() < due) {
    // Group commit under load: what arrives until `due` shares this commit.
    lock.unlock();
    std::this_thread::sleep_until(due);
    lock.lock();
  }
  last_commit_ = clock::now();
  return true;
}

}  // namespace agw::core
