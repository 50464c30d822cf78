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

// Called by each worker thread of a run (the caller of run() included) as it
// starts and as it stops being one.
void worker_entered() noexcept;
void worker_left() noexcept;
// Called by run() as a runtime starts and as it ends.
void runtime_started() noexcept;
void runtime_ended() noexcept;
// How many runtimes are running in the process.
long runtimes_running() noexcept;

// For one walk of the deadlock detector (runtime_core::find_deadlock): forget
// the previous answer; the next others_alive() on this thread asks the kernel.
void begin_walk() noexcept;
// Whether a thread other than the runtimes' workers exists. Outside Linux, or
// if the kernel cannot say: true.
bool others_alive() noexcept;

// Whether the calling thread is the process's only one (so, with no runtime
// running, nothing could ever complete a wait it starts). False if the
// kernel cannot say. About 2 us: asked only by a plain thread about to block.
bool only_thread() noexcept;

}  // namespace csp::detail::thread_census
