#pragma once
// Runs storage work on its own threads so that io threads never wait for SQLite (their
// only disk write is the event journal's page-cache append: persistence's
// sqlite_event_writer).
//
// One writer thread owns the single write connection and drains its queue in
// batches: every job of a batch runs in its own savepoint inside one
// transaction, and one commit covers them all (group commit). Urgent jobs (the
// event log's) run first in every batch, and a batch stops taking ordinary jobs
// after `batch_budget` of work, so a burst of requests never holds released
// events back for long. Reader threads each own a read connection. Completions
// are posted to the caller's executor, except a write batch's for io contexts' own
// executors (core::io_strand: the channels' and connections' strands), which go to each
// context at once (core/completion_inbox runs them in place on its thread, a
// slice at a time, between the context's other handlers): a commit of a burst of new
// runs does not queue hundreds of run starts ahead of the streams already running.
// The order between a read's completion and a write's on one strand is not kept (it
// never was promised: they come from different threads).
//
// Thread-safety: async_write/async_read may be called from any thread. Both
// queues are bounded; a job offered to a full queue fails at once with
// store_busy (the API answers 503) and is counted in rejected().
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>
#include <vector>

#include "core/commit_pacer.hpp"
#include "core/completion_fanout.hpp"
#include "core/histogram.hpp"
#include "core/storage/store_connection.hpp"

namespace agw::core {

class store_busy : public store_error {
 public:
  store_busy() : store_error("storage queue is full") {}
};

class store_executor {
 public:
  enum class connection_role { writer, reader };
  using connection_factory = std::function<std::unique_ptr<store_connection>(connection_role)>;

  struct options {
    std::size_t readers = 2;
    std::size_t queue_capacity = 100'000;  // per queue
    std::size_t max_batch = 1024;          // jobs per write transaction
    // Ordinary jobs a batch runs after this much work go to the next batch (at least one runs).
    std::chrono::microseconds batch_budget{2000};
    // Under load, commits are at least this far apart (jobs wait up to this long
    // to share a commit); an idle writer commits a new job at once.
    std::chrono::microseconds min_commit_interval{1000};
    // The writer thread's nice value above the process's (core/thread_priority.hpp): its
    // commits yield a busy core to the threads a streamed token waits on.
    int writer_nice = 0;
  };

  store_executor(connection_factory make_connection, options opts);
  ~store_executor();
  store_executor(const store_executor&) = delete;
  store_executor& operator=(const store_executor&) = delete;

  // Finishes every queued job, then joins the threads. Later jobs fail with store_error.
  void stop();

  // f(store_connection&) -> R runs inside a write transaction; handler gets (exception_ptr[, R]).
  template <class F, class Token>
  auto async_write(F f, Token&& token) {
    return initiate(queue_kind::write, std::move(f), std::forward<Token>(token));
  }
  // The same, ahead of ordinary writes (a batch runs every urgent job first).
  template <class F, class Token>
  auto async_write_urgent(F f, Token&& token) {
    return initiate(queue_kind::urgent_write, std::move(f), std::forward<Token>(token));
  }
  // f runs on a read connection, outside any write transaction.
  template <class F, class Token>
  auto async_read(F f, Token&& token) {
    return initiate(queue_kind::read, std::move(f), std::forward<Token>(token));
  }

  std::uint64_t rejected() const { return rejected_.load(); }
  // Jobs waiting in the queues (takes each queue's lock: for /metrics, not the hot path).
  std::size_t queue_depth();
  // Seconds each write batch took, from BEGIN to COMMIT.
  const histogram& commit_latency() const { return commit_seconds_; }
  std::uint64_t batches_committed() const { return batches_.load(); }
  std::uint64_t jobs_committed() const { return jobs_.load(); }

 private:
  struct job {
    std::function<void(store_connection&)> run;  // may throw
    // Posts the completion, or (the writer's batch) gives it to `into`, which hands an
    // io_strand's over to its context and posts any other.
    std::function<void(std::exception_ptr, completion_fanout* into)> finish;
  };
  struct queue {
    std::mutex mutex;
    std::condition_variable ready;
    std::deque<job> jobs;
    std::deque<job> urgent;  // writes only
  };
  enum class queue_kind { read, write, urgent_write };

  template <class R>
  using signature_of = std::conditional_t<std::is_void_v<R>, void(std::exception_ptr),
                                          void(std::exception_ptr, std::conditional_t<std::is_void_v<R>, int, R>)>;

  template <class F, class Token>
  auto initiate(queue_kind kind, F f, Token&& token) {
    using result = std::invoke_result_t<F&, store_connection&>;
    return boost::asio::async_initiate<Token, signature_of<result>>(
        [this, kind](auto handler, F fn) { submit<result>(kind, std::move(fn), std::move(handler)); }, token, std::move(f));
  }

  template <class R, class F, class Handler>
  void submit(queue_kind kind, F f, Handler handler) {
    struct state {
      F fn;
      Handler handler;
      std::optional<std::conditional_t<std::is_void_v<R>, char, R>> result;
    };
    // A tracked executor keeps the caller's io_context running until the completion is
    // posted or handed over (the inbox's posted handler then keeps it running).
    auto executor = boost::asio::get_associated_executor(handler);
    auto work = boost::asio::prefer(executor, boost::asio::execution::outstanding_work.tracked);
    auto s = std::make_shared<state>(state{std::move(f), std::move(handler), std::nullopt});
    job j{[s](store_connection& c) {
            if constexpr (std::is_void_v<R>) {
              s->fn(c);
              s->result.emplace('\0');
            } else {
              s->result.emplace(s->fn(c));
            }
          },
          [s, executor = std::move(executor), work = std::move(work)](std::exception_ptr error, completion_fanout* into) mutable {
            auto complete = [s, error]() mutable {
              if constexpr (std::is_void_v<R>) {
                std::move(s->handler)(error);
              } else {
                std::move(s->handler)(error, error ? R{} : std::move(*s->result));
              }
            };
            if (into)
              into->add(executor, std::move(complete));
            else
              boost::asio::post(work, std::move(complete));
          }};
    push(kind, std::move(j));
  }

  void push(queue_kind kind, job j);
  // The writer thread's pacing between batches.
  struct writer_state {
    commit_pacer pacer;      // when the next commit starts
    bool cut_short = false;  // the last batch left jobs behind: no pause before the next
  };
  void writer_loop(store_connection& c);
  // Waits for jobs and takes the next batch, urgent ones first; false: stopping and drained.
  bool take_batch(writer_state& w, std::vector<job>& batch, std::size_t& urgent);
  // Runs the batch in one transaction, each job in a savepoint; returns how many ran (the
  // budget may leave the rest for the next batch). Throws when the batch itself failed.
  std::size_t run_batch(store_connection& c, std::vector<job>& batch, std::size_t urgent,
                        std::vector<std::exception_ptr>& errors);
  void reader_loop(store_connection& c);

  options opts_;
  queue writes_;
  queue reads_;
  std::vector<std::unique_ptr<store_connection>> connections_;  // [0] writes
  std::vector<std::thread> threads_;
  std::atomic<bool> stopping_{false};
  std::atomic<std::uint64_t> rejected_{0};
  std::atomic<std::uint64_t> batches_{0};
  std::atomic<std::uint64_t> jobs_{0};
  histogram commit_seconds_{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5};
};

}  // namespace agw::core
