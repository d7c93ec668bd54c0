#include "core/paced_worker.hpp"

#include "core/thread_name.hpp"

namespace agw::core {

paced_worker::paced_worker(std::string thread_name, std::chrono::microseconds interval, std::function<void()> job)
    : name_(std::move(thread_name)), job_(std::move(job)), pacer_(interval), thread_([this] {
        name_this_thread(name_);
        loop();
      }) {}

paced_worker::~paced_worker() { stop(); }

void paced_worker::notify() {
  {
    std::lock_guard lock(mutex_);
    if (pending_) return;  // a run is asked for already: it takes this work too
    pending_ = true;
  }
  // A worker that is running the job or pacing itself looks again without being woken.
  ready_.notify_one();
}

void paced_worker::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
  }
  ready_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void paced_worker::loop() {
  std::unique_lock lock(mutex_);
  while (pacer_.wait_turn(
      lock, ready_, [this] { return pending_; }, [this] { return stopping_; })) {
    pending_ = false;
    lock.unlock();
    job_();
    lock.lock();
  }
}

}  // namespace agw::core
