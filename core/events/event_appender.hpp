#pragma once
// Gathers the event batches of every session channel into one store write job
// per writer cycle: one job and one savepoint for however many sessions
// published meanwhile, one journal row for all their small batches, then one
// completion that hands each channel its own outcome on its strand. Without it each channel's batch
// was a job of its own, and that overhead (savepoint, queueing, a cross-thread
// completion) was paid per event by paced runs (docs/streaming.md).
//
// Thread-safety: append() may be called from any thread. The store executor
// must be stopped (its queue drained) before the appender is destroyed.
#include <boost/asio/any_io_executor.hpp>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "core/events/journal_claims.hpp"
#include "core/store_executor.hpp"

namespace agw::core {

class event_appender {
 public:
  struct request {
    event_batch_record record;
    bool as_segment = false;                        // event_batches row; else the journal
    std::size_t retention = 0;                      // segments: events the session keeps (0 = all)
    std::shared_ptr<journal_claims::claim> claim;   // journal rows: held from inside the job
    boost::asio::any_io_executor executor;          // where `done` runs (the channel's strand)
    std::function<void(std::exception_ptr)> done;   // after the commit, or with the error
  };

  // `io`: where the job's completion fans out from (posts to each request's executor).
  event_appender(store_executor& store, boost::asio::any_io_executor io);

  void append(request r);

 private:
  void submit();
  static void write_segment(store_connection& c, const request& r);
  static void complete(std::vector<request>& requests, const std::vector<std::exception_ptr>& errors, std::exception_ptr all);

  store_executor& store_;
  boost::asio::any_io_executor io_;
  std::mutex mutex_;
  std::vector<request> pending_;  // taken by the next job when the writer runs it
  bool job_queued_ = false;       // a job is queued that has not taken pending_ yet
};

}  // namespace agw::core
