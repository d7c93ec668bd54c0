#pragma once
// The event journal on disk: an append-only sequence of records in a directory of
// its own beside the database (`<db>-events/`), where a paced run's small event
// batches are made durable without a SQLite transaction (docs/streaming.md, "The
// event log"). One record per append; each record is
//   u32 payload bytes | u32 CRC-32 of (seq, payload) | u64 seq | payload
// (host byte order: the files never leave the machine that wrote them, and live
// only until their events are in segments or folded at start-up). Seqs count up
// from 1 and are never handed out twice while a directory has files.
//
// Durability is that of a write(2) that returned: the bytes are in the page cache,
// so they survive a kill of the process, as a SQLite commit with
// synchronous=NORMAL does. Nothing is fsynced on the way of an event; a power
// loss may lose the newest records, and a torn or corrupt record ends what is read
// of its file (a failed append is cut off again before the next one, and a file that
// could not be cut is left for a new one).
//
// The directory holds several files, each named by the first seq it holds, so that
// whole files can be removed once no session needs their records (detach_below).
//
// Thread-safety: none. One thread at a time appends and releases (the event writer's
// io threads and journal thread, under the writer's lock); read() and remove_all() are
// for start-up, before any appender exists.
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace agw::persistence {

// Where the journal of the database at `db_path` lives: `<db>-events` beside the
// database file, the path resolved (symbolic links, `..`) so that two spellings of one
// database name one journal directory.
std::filesystem::path journal_dir_for(const std::string& db_path);

// The journal directory's owner for the life of a serving process: an exclusive
// flock on `<dir>/lock`, taken before the start-up fold (which removes the journal's
// files) and held until the process ends. A second gateway on the same database
// fails to start instead of removing the files the first one writes.
class journal_dir_lock {
 public:
  // Throws store_error when another process holds it.
  explicit journal_dir_lock(const std::filesystem::path& dir);
  ~journal_dir_lock();
  journal_dir_lock(const journal_dir_lock&) = delete;
  journal_dir_lock& operator=(const journal_dir_lock&) = delete;

 private:
  int fd_ = -1;
};

class journal_file {
 public:
  struct options {
    std::size_t file_bytes = 16 << 20;  // a file past this size is closed and a new one started
  };

  // Opens `dir` (made if missing) for appending; records number on after any the
  // directory still holds.
  explicit journal_file(std::filesystem::path dir, options opts);
  ~journal_file();
  journal_file(const journal_file&) = delete;
  journal_file& operator=(const journal_file&) = delete;

  // Writes one record and returns its seq. Throws store_error when it could not be
  // written whole; then nothing of it will be read back.
  std::uint64_t append(std::string_view payload);
  // Every file all of whose records have seqs below `seq` (never the file being
  // written), no longer this journal's, for the caller to remove (outside whatever lock
  // guards appends: an unlink may take a while). One that is never removed is folded
  // again at the next start-up, which writes nothing twice.
  std::vector<std::filesystem::path> detach_below(std::uint64_t seq);

  std::uint64_t next_seq() const { return next_seq_; }
  std::size_t file_count() const { return files_.size(); }

  // Every whole record of `dir` in seq order, up to the first torn or corrupt one
  // of each file. A directory that does not exist holds none.
  static void read(const std::filesystem::path& dir,
                   const std::function<void(std::uint64_t seq, std::string_view payload)>& each);
  // Removes every journal file of `dir` (what read() saw is stored elsewhere now).
  static void remove_all(const std::filesystem::path& dir);

 private:
  struct file {
    std::uint64_t first_seq;
    std::filesystem::path path;
  };
  void start_file();  // a new file for the next seq
  void close_current();

  std::filesystem::path dir_;
  options opts_;
  std::deque<file> files_;  // oldest first; the back one is being written
  int fd_ = -1;
  std::size_t offset_ = 0;  // bytes of whole records in the current file
  std::uint64_t next_seq_ = 1;
  std::string record_;  // the record being written (its buffer is kept)
};

}  // namespace agw::persistence
