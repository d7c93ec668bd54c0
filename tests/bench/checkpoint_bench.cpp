// checkpoint_bench: the writer-thread cost of a conversation's checkpoints as it grows,
// on a real SQLite file: every version's append_checkpoint timed, and each snapshot
// (the rare expensive one) reported with its conversation's size. Run twice, with the
// run's own conversation handed to the store (checkpoint_delta::whole_state, what the
// gateway does) and without it (the store reads and folds the chain first), and the
// median of --repeat passes printed side by side. Prints figures, not verdicts.
//
//   checkpoint_bench [--versions N] [--bytes B] [--repeat R] [--dir D]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/checkpoint_delta.hpp"
#include "persistence/migrations.hpp"
#include "persistence/sqlite_store.hpp"

namespace {

using namespace agw;
using micros = std::chrono::duration<double, std::micro>;

struct pass {
  double mean_us = 0;
  std::map<std::size_t, double> snapshot_us;  // by messages in the conversation
};

// One conversation grown to `versions` messages of `bytes` characters, one version each.
pass run_pass(const std::filesystem::path& file, int versions, std::size_t bytes, bool whole) {
  std::filesystem::remove(file);
  std::filesystem::remove(file.string() + "-wal");
  persistence::sqlite_database::options o;
  o.auto_checkpoint = false;  // a WAL checkpoint inside a timed append would be noise
  {
    persistence::sqlite_database db(file.string(), o);
    persistence::migrate(db);
  }
  persistence::sqlite_store store(file.string(), o, nullptr);
  core::session_record s;
  s.id = "s";
  s.thread_id = "t";
  store.insert_session(s);
  core::conversation_state state;
  pass out;
  double total = 0;
  for (int v = 1; v <= versions; ++v) {
    core::message_record m;
    m.id = "m" + std::to_string(v);
    m.session_id = "s";
    m.role = v % 2 ? "user" : "assistant";
    m.content = std::string(bytes, 'x');
    m.status = "complete";
    state.messages.push_back(std::move(m));
    auto d = core::make_checkpoint_delta(s, v, state, state.messages.size() - 1);
    if (whole) d.whole_state = &state;
    store.begin_batch();
    const auto t0 = std::chrono::steady_clock::now();
    store.append_checkpoint(d);
    const double us = micros(std::chrono::steady_clock::now() - t0).count();
    store.commit_batch();
    total += us;
    if (v > 1 && store.checkpoint_footprint_of("t").rows == 1) out.snapshot_us[state.messages.size()] = us;
  }
  out.mean_us = total / versions;
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int versions = 5000, repeat = 3;
  std::size_t bytes = 300;
  std::filesystem::path dir = std::filesystem::temp_directory_path();
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--versions")
      versions = std::stoi(value);
    else if (flag == "--bytes")
      bytes = std::stoul(value);
    else if (flag == "--repeat")
      repeat = std::max(1, std::stoi(value));
    else if (flag == "--dir")
      dir = value;
  }
  const auto file = dir / ("checkpoint_bench-" + std::to_string(::getpid()) + ".db");
  std::map<bool, std::vector<pass>> passes;
  for (int r = 0; r < repeat; ++r)  // interleaved, so a noisy spell hits both
    for (bool whole : {false, true}) passes[whole].push_back(run_pass(file, versions, bytes, whole));
  std::filesystem::remove(file);
  std::filesystem::remove(file.string() + "-wal");
  std::filesystem::remove(file.string() + "-shm");

  std::printf("checkpoint_bench: %d versions of one %zu-byte message each, medians of %d passes (us)\n", versions, bytes, repeat);
  std::printf("%-24s %14s %14s\n", "", "read+fold", "whole_state");
  auto column = [&](bool whole, auto pick) {
    std::vector<double> v;
    for (const auto& p : passes[whole]) v.push_back(pick(p));
    return median(v);
  };
  std::printf("%-24s %14.1f %14.1f\n", "mean per append", column(false, [](const pass& p) { return p.mean_us; }),
              column(true, [](const pass& p) { return p.mean_us; }));
  for (const auto& [messages, _] : passes[true].front().snapshot_us) {
    auto at = [m = messages](const pass& p) { return p.snapshot_us.count(m) ? p.snapshot_us.at(m) : 0.0; };
    std::printf("snapshot at %6zu msgs   %14.0f %14.0f\n", messages, column(false, at), column(true, at));
  }
}
