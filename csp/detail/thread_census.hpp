#pragma once
// Whether the process has threads besides the workers of its running csp
// runtimes: the deadlock detector's test for "an outside thread may still act".
//
// An end made outside any runtime that no process has taken yet (channel.hpp)
// only matters if some thread outside the runtimes could use it. A program
// that never starts a thread of its own has none, and its channels get the
// deadlock report whatever thread made their ends.
//
// Counting errs on the side of "others exist": a worker is counted only from
// its first scheduling step until just before its thread ends, so a thread the
// kernel lists but the census does not is always taken for an outside one.
namespace csp::detail::thread_census {

// The runtimes and their workers are counted in one word, so one read sees
// both at the same moment: a detector that read "one runtime" and then, a
// /proc read later, "as many workers as threads" would miss a thread that
// started a runtime in between (it was an outside thread before and is a
// runtime's worker after: either way something that may act).

// Called by run() on its own thread as a runtime starts and as it ends: a
// runtime more and a worker more, or less, at once.
void run_started() noexcept;
void run_ended() noexcept;
// Called by each further worker thread of a run as it starts and as it stops
// being one.
void worker_entered() noexcept;
void worker_left() noexcept;
// How many runtimes are running in the process.
long runtimes_running() noexcept;

// For one walk of the deadlock detector (runtime_core::find_deadlock): forget
// the previous answer; the next others_may_act() on this thread asks again.
void begin_walk() noexcept;
// Whether something besides the calling runtime may act: another runtime
// runs, or a thread other than the runtimes' workers exists. Outside Linux,
// or if the kernel cannot say: true.
bool others_may_act() noexcept;

// Whether the calling thread is the process's only one (so, with no runtime
// running, nothing could ever complete a wait it starts). False if the
// kernel cannot say. About 2 us: asked only by a plain thread about to block.
bool only_thread() noexcept;

}  // namespace csp::detail::thread_census
