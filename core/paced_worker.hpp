#pragma once
// A thread of its own that runs one job whenever it is told there is work: at once
// after a quiet spell, at most once per `interval` under load (commit_pacer.hpp), so
// that what is handed over meanwhile shares one run of the job. The event journal's
// thread is one: each run writes every batch appended outside the io threads in one
// record, and removes the files no tail needs when that is due.
//
// The job finds its work itself (the worker only knows that there is some) and settles
// its own failures; an exception that escapes it (memory) ends the process, as on any
// thread of the server, rather than leave what the job had taken waiting for ever.
// notify() from inside the job asks for another run.
//
// Thread-safety: notify() may be called from any thread and never blocks on the job;
// it wakes the thread only when it may be asleep waiting for work. stop() (also run
// by the destructor) runs the job once more when work was notified, then joins.
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "core/commit_pacer.hpp"

namespace agw::core {

class paced_worker {
 public:
  paced_worker(std::string thread_name, std::chrono::microseconds interval, std::function<void()> job);
  ~paced_worker();
  paced_worker(const paced_worker&) = delete;
  paced_worker& operator=(const paced_worker&) = delete;

  void notify();
  void stop();

 private:
  void loop();

  const std::string name_;
  std::function<void()> job_;
  commit_pacer pacer_;  // the worker thread's alone
  std::mutex mutex_;
  std::condition_variable ready_;
  bool pending_ = false;  // notified since the job last started
  bool stopping_ = false;
  std::thread thread_;  // last: started once everything above is
};

}  // namespace agw::core
