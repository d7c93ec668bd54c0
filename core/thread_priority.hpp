#pragma once
// A background thread's CPU priority. The store's writer and the WAL checkpointer do
// throughput work (commits, page copies) that nothing waits on at a token's pace; the
// io threads and the event journal's thread are what a streamed token waits on. On a
// machine whose cores are busy (1,000 runs starting or ending at once on 2 cores) the
// kernel shares a core by weight, so a background thread a few nice levels down yields
// to them there and loses nothing when a core is free (docs/architecture.md, "Threads").
namespace agw::core {

// Raises the calling thread's nice value by `increment` (0: no change), at most to 19.
// Linux keeps a nice value per thread. Returns false when the kernel refused (raising it
// needs no privilege, so only an unusual sandbox refuses); the thread runs on unchanged.
bool lower_this_thread_priority(int increment);

// The calling thread's nice value.
int this_thread_nice();

}  // namespace agw::core
