#include "core/io_pool.hpp"

#include <thread>

#include "core/thread_name.hpp"

namespace agw::core {

namespace net = boost::asio;

namespace {
// The context the calling thread serves (set for the thread's whole run()).
thread_local net::io_context* serving = nullptr;
}  // namespace

io_pool::io_pool(unsigned threads, std::string name) : name_(std::move(name)) {
  const unsigned n = threads ? threads : 1;
  for (unsigned i = 0; i < n; ++i) {
    // Hint 1: this context is run by one thread only (no wake-ups of idle peers).
    contexts_.push_back(std::make_unique<net::io_context>(1));
    keep_running_.push_back(net::make_work_guard(contexts_.back()->get_executor()));
  }
}

io_pool::~io_pool() { stop(); }

net::io_context& io_pool::next() { return *contexts_[turn_.fetch_add(1, std::memory_order_relaxed) % contexts_.size()]; }

net::io_context& io_pool::local_or_next() {
  for (auto& c : contexts_)
    if (c.get() == serving) return *c;
  return next();
}

void io_pool::run() {
  std::vector<std::thread> threads;
  for (std::size_t i = 1; i < contexts_.size(); ++i)
    threads.emplace_back([this, i] {
      name_this_thread(name_ + std::to_string(i));
      serving = contexts_[i].get();
      contexts_[i]->run();
      serving = nullptr;
    });
  // The calling thread keeps its name (pgrep, top, systemd see the process's).
  serving = contexts_.front().get();
  contexts_.front()->run();
  serving = nullptr;
  for (auto& t : threads) t.join();
}

void io_pool::stop() {
  for (auto& g : keep_running_) g.reset();
  for (auto& c : contexts_) c->stop();
}

}  // namespace agw::core
