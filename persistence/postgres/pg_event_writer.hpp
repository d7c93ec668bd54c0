#pragma once
// PostgreSQL's way of making the live pipeline's events durable (core's
// event_log_writer port). Each batch becomes one event_batches row. Batches that
// arrive while the writer thread is busy wait in `pending_` and go together: one
// urgent store job takes every one of them and writes them with one multi-row
// INSERT, so a commit (one WAL flush) costs per writer cycle, not per event or per
// session. SQLite needed a shared journal for that (sqlite_event_writer.hpp);
// PostgreSQL's WAL already is one.
//
// Thread-safety: open(), forget(), retire() and append() may be called from any thread (one
// mutex). A session has at most one batch in flight (the channel's promise), so one
// job never holds two rows of one session. Each batch's `done` is posted to its own
// executor after the commit. The store executor must be stopped (its queue drained)
// before the writer is destroyed.
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/storage/event_log_writer.hpp"
#include "core/store_executor.hpp"

namespace agw::persistence::pg {

class pg_event_writer final : public core::event_log_writer {
 public:
  explicit pg_event_writer(core::store_executor& store) : store_(store) {}

  // (Every batch is a row of the session's, deleted with it: the thread id is not needed.)
  std::shared_ptr<session_log> open(const std::string& session_id, const std::string& thread_id) override;
  void forget(std::string_view session_id) override;
  // Always: every committed batch is a row a read finds, and the channel that retires has
  // no batch in flight.
  bool retire(std::string_view session_id) override;

 private:
  struct session_state final : session_log, std::enable_shared_from_this<session_state> {
    session_state(pg_event_writer& w, std::string id) : writer(w), session_id(std::move(id)) {}
    void append(batch b) override { writer.append_to(*this, std::move(b)); }
    pg_event_writer& writer;
    const std::string session_id;
    bool forgotten = false;  // mutex_: deleted, nothing it appends is kept
  };
  struct request {
    std::shared_ptr<session_state> session;
    batch b;
  };
  // What one store job took, and each request's outcome.
  struct taken_job {
    bool ran = false;
    std::vector<request> requests;
    std::vector<std::exception_ptr> errors;
  };

  void append_to(session_state& s, batch b);
  void submit(const boost::asio::any_io_executor& completion_executor);
  void run_job(core::store_connection& c, taken_job& job);  // the writer thread
  static void write_one(core::store_connection& c, const request& r);

  core::store_executor& store_;
  std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<session_state>> sessions_;  // opened, not forgotten
  std::vector<request> pending_;                                              // bounded: one batch per open session at most
  bool job_queued_ = false;                                                   // a job is queued that has not taken pending_ yet
};

}  // namespace agw::persistence::pg
