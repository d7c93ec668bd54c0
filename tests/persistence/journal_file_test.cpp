// persistence/journal_file.{hpp,cpp}: the event journal's records on disk.
#include "persistence/journal_file.hpp"

#include <doctest/doctest.h>
#include <sys/resource.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "core/ids.hpp"
#include "core/storage/store_error.hpp"

namespace {

namespace fs = std::filesystem;
using agw::persistence::journal_file;

struct temp_dir {
  fs::path path = fs::temp_directory_path() / ("agw-journal-" + agw::core::new_uuid());
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

using records = std::vector<std::pair<std::uint64_t, std::string>>;

records read_all(const fs::path& dir) {
  records out;
  journal_file::read(dir, [&](std::uint64_t seq, std::string_view payload) { out.emplace_back(seq, std::string(payload)); });
  return out;
}

std::vector<fs::path> files_of(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("journal_file: records read back whole, in seq order, bytes as written") {
  temp_dir dir;
  {
    journal_file j(dir.path, {});
    CHECK(j.append("first") == 1);
    CHECK(j.append(std::string("\0binary\n\xff", 9)) == 2);
    CHECK(j.append("") == 3);
    CHECK(j.next_seq() == 4);
  }
  CHECK(read_all(dir.path) == records{{1, "first"}, {2, std::string("\0binary\n\xff", 9)}, {3, ""}});
  // A directory that does not exist holds no records.
  CHECK(read_all(dir.path / "none").empty());
}

TEST_CASE("journal_file: full files are closed and handed over whole once nothing below a seq is needed") {
  temp_dir dir;
  journal_file j(dir.path, {.file_bytes = 40});  // two 16-byte headers and their payloads
  for (int i = 1; i <= 7; ++i) j.append("record" + std::to_string(i));
  // Files of two records each: 1-2, 3-4, 5-6, 7 (the one being written).
  CHECK(j.file_count() == 4);
  CHECK(read_all(dir.path).size() == 7);
  const auto remove = [](const std::vector<std::filesystem::path>& paths) {
    for (const auto& p : paths) CHECK(std::filesystem::remove(p));
  };
  auto gone = j.detach_below(4);  // 4 is still needed: its file (3-4) stays
  REQUIRE(gone.size() == 1);
  CHECK(gone.front().filename() == "00000000000000000001.evj");
  CHECK(j.file_count() == 3);
  CHECK(read_all(dir.path).size() == 7);  // handed over, not removed: the caller does that
  remove(gone);
  CHECK(read_all(dir.path).front().first == 3);
  CHECK(j.detach_below(4).empty());  // handed over once
  gone = j.detach_below(100);        // never the file being written
  CHECK(gone.size() == 2);
  remove(gone);
  CHECK(j.file_count() == 1);
  CHECK(read_all(dir.path) == records{{7, "record7"}});
  CHECK(j.append("record8") == 8);
}

TEST_CASE("journal_file: a torn or corrupt record ends what is read of its file, not of the next") {
  temp_dir dir;
  {
    journal_file j(dir.path, {.file_bytes = 40});
    for (int i = 1; i <= 4; ++i) j.append("record" + std::to_string(i));
  }
  auto files = files_of(dir.path);
  REQUIRE(files.size() == 2);
  // The first file's second record loses its last byte (a crash mid-write) ...
  fs::resize_file(files[0], fs::file_size(files[0]) - 1);
  // ... and a byte of the second file's first payload flips (the checksum catches it).
  {
    std::fstream f(files[1], std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(16);
    f.put('X');
  }
  CHECK(read_all(dir.path) == records{{1, "record1"}});
  // Opened again, numbering goes on after anything the directory holds (torn records
  // included), in a file of its own.
  journal_file again(dir.path, {});
  const auto next = again.append("next");
  CHECK(next > 4);
  CHECK(read_all(dir.path).back() == std::pair<std::uint64_t, std::string>{next, "next"});
}

TEST_CASE("journal_file: a failed append is cut off, so the records after it are read") {
  temp_dir dir;
  journal_file j(dir.path, {});
  j.append("before");
  // The process may write no further than the file's size plus a few bytes: the next
  // record is written in part, then refused (EFBIG; SIGXFSZ ignored meanwhile).
  const auto size = fs::file_size(files_of(dir.path).front());
  rlimit old{};
  REQUIRE(getrlimit(RLIMIT_FSIZE, &old) == 0);
  auto* previous = std::signal(SIGXFSZ, SIG_IGN);
  rlimit tight = old;
  tight.rlim_cur = size + 20;
  REQUIRE(setrlimit(RLIMIT_FSIZE, &tight) == 0);
  CHECK_THROWS_AS(j.append(std::string(100, 'x')), agw::core::store_error);
  REQUIRE(setrlimit(RLIMIT_FSIZE, &old) == 0);
  std::signal(SIGXFSZ, previous);
  CHECK(fs::file_size(files_of(dir.path).front()) == size);  // nothing of it is left
  // Its seq is used up: a gap, never a name or seq given twice.
  CHECK(j.append("after") == 3);
  CHECK(read_all(dir.path) == records{{1, "before"}, {3, "after"}});
}

TEST_CASE("journal_file: the directory's lock is held by one owner at a time") {
  temp_dir dir;
  {
    agw::persistence::journal_dir_lock first(dir.path);
    CHECK_THROWS_AS(agw::persistence::journal_dir_lock(dir.path), agw::core::store_error);
    // The lock file is no journal file.
    journal_file j(dir.path, {});
    CHECK(j.append("x") == 1);
  }
  agw::persistence::journal_dir_lock again(dir.path);  // free once the first is gone
  CHECK(read_all(dir.path) == records{{1, "x"}});
}

TEST_CASE("journal_file: every spelling of one database names one journal directory, and so one lock") {
  temp_dir dir;
  fs::create_directories(dir.path / "data");
  fs::create_directory_symlink(dir.path / "data", dir.path / "link");
  fs::create_symlink(dir.path / "data" / "gw.db", dir.path / "data" / "alias.db");  // dangling: no database yet
  const auto direct = agw::persistence::journal_dir_for((dir.path / "data" / "gw.db").string());
  CHECK(direct == fs::weakly_canonical(dir.path) / "data" / "gw.db-events");
  CHECK(agw::persistence::journal_dir_for((dir.path / "link" / "gw.db").string()) == direct);
  CHECK(agw::persistence::journal_dir_for((dir.path / "link" / ".." / "data" / "gw.db").string()) == direct);
  CHECK(agw::persistence::journal_dir_for((dir.path / "data" / "alias.db").string()) == direct);
  // A relative path names the same directory as its absolute spelling.
  const auto here = fs::current_path();
  fs::current_path(dir.path / "link");
  const auto relative = agw::persistence::journal_dir_for("gw.db");
  fs::current_path(here);
  CHECK(relative == direct);

  agw::persistence::journal_dir_lock first(direct);
  CHECK_THROWS_AS(agw::persistence::journal_dir_lock(agw::persistence::journal_dir_for((dir.path / "link" / "gw.db").string())),
                  agw::core::store_error);
}

TEST_CASE("journal_file: remove_all leaves an empty directory; a new journal starts at seq 1") {
  temp_dir dir;
  {
    journal_file j(dir.path, {.file_bytes = 1});
    j.append("a");
    j.append("b");
  }
  journal_file::remove_all(dir.path);
  CHECK(read_all(dir.path).empty());
  journal_file j(dir.path, {});
  CHECK(j.append("c") == 1);
}
