#pragma once
// Every spin and interval of the core's scheduling, with the reason for its
// value. The costs they trade against, measured on the project's reference
// machine (2 cores; bench/csp_bench): a fiber switch costs about 6 ns;
// Commstime on one thread about 72 ns per communication; waking a thread
// asleep on a condition variable or in poll, 10-20 us until it runs.
//
// Elsewhere, because they are options a user may set: the IO scheduler's
// spin before it sleeps in poll (io::scheduler_options::spin, CSP_IO_SPIN_US)
// and how often its hand-over spins before yielding (iosched/handover.cpp).
#include <chrono>

namespace csp::detail::tuning {

// An idle worker of a multi-threaded runtime spins this long, looking for
// work, before it sleeps: another worker hands work over within a few
// microseconds in a busy network, while a sleep costs a thread wake-up
// (10-20 us) on both sides. Commstime on two threads: 47-59 us per cycle
// without the spin, 1.3-12.6 us with 50 us. A one-thread runtime does not spin: no other thread of it can
// make work, and an outside wake-up pays the sleep either way.
inline constexpr std::chrono::microseconds idle_spin{50};
// While another worker has queued work that is not stealable yet (younger
// than steal_delay), an idle worker keeps spinning up to this long: it will
// probably be able to take some soon, and a sleep would cost a wake-up.
inline constexpr std::chrono::microseconds idle_spin_expecting{1000};
// A spinning worker pauses this many times between looks at the others'
// queues. A look reads cache lines the busy workers write; looking more
// often than every few hundred nanoseconds slows them down more than it
// shortens any wait.
inline constexpr unsigned idle_spin_pauses = 8;
// A worker's queue may be stolen from once it has held work this long (a
// fiber waited, or the queue never ran dry: queue_look.hpp): its owner
// usually runs a fiber sooner (Commstime's queued process waits about one
// cycle, a few hundred ns), and a steal moves the fiber's stack and the
// channels it uses to another core. Work that waits longer is work the owner
// cannot keep up with.
inline constexpr std::chrono::microseconds steal_delay{4};
// The spin reads the clock once per this many looks (a clock read costs about
// as much as 16 looks at the other workers' queues).
inline constexpr unsigned idle_spin_clock_every = 16;

// While fibers are always ready the workers never idle, so they also poll
// the idle poller without blocking at most once per this interval: file
// descriptors are served even in a program that never rests, at a cost of
// one non-blocking poll (about 1 us) per millisecond of computation.
inline constexpr std::chrono::microseconds busy_poll_interval{1000};
// csp::yield_to_io() polls at once unless the last busy poll is younger
// than this: a task graph's worker that asks after every body of 20 us
// polls once per two or three bodies. Each poll is a system call over every
// descriptor of the node (1-3 us on a virtual machine, more with many
// peers); asked after every body, they cost a tenth of a 4-node Jacobi
// step (examples/jacobi.cpp graph over UCX: half the polls, 5 of 6 runs
// faster).
inline constexpr std::chrono::microseconds yield_to_io_gap{50};
// The busy-poll clock is read once per this many scheduling decisions, so
// that a switch costs no clock read (about 20 ns, three switches' worth).
inline constexpr unsigned busy_poll_clock_every = 32;

// A one-thread runtime runs Boost's dispatcher context (which moves fibers
// woken from other threads and expired timers into the ready queue, and
// frees finished fibers) only when nothing else is ready, and otherwise once
// per this many picks. Its round (a clock read, two queue scans, two
// switches) costs more than a communication. Commstime per communication:
// 160 ns with the dispatcher on every pick, 81 ns once per 8, 72 ns once per
// 64; the price is a remote wake-up or a timer waiting at most 64 switches
// (well under 1 us).
inline constexpr unsigned dispatch_interval = 64;

// A process yields after this many reads and selects without a switch of its
// worker (turn.hpp), so that timers, wake-ups from other threads and higher
// priorities are served under a flood. A write and a read of a buffered
// value cost about 14 ns, so a turn of a pure flood lasts about 15 us, and
// its yield and dispatcher round cost it 0.3-0.6% (csp_bench buffered/csp:
// 14.29-14.41 ns against 14.21-14.39 without turns, 2026-11-26).
inline constexpr unsigned ops_per_turn = 1024;

// A worker runs the process in its run-next slot (the one woken last) before
// queued processes of its own priority at most this many times in a row: a
// ping-pong of two processes keeps the slot busy and would otherwise starve
// every queued equal. (Lower priorities wait for it regardless.)
inline constexpr unsigned run_next_streak = 16;

// An idle worker steals a process from another's run-next slot only if it
// saw it there this long ago and the owner scheduled nothing since: the
// owner is running one long process. Sooner would break up a ping-pong
// (each pick is tens of nanoseconds); Go waits about 3 us. A pair that
// computes side by side pays it once: a process taken from a slot goes
// back to its worker at its next wake-up (hand_off). Longer (15 or 25 us)
// lost most of what two coarse stages gain (docs/performance.md, a
// producer and a consumer on two cores).
inline constexpr std::chrono::microseconds run_next_steal_delay{5};

// A worker that goes to sleep while another holds ready work (in its queue
// or run-next slot) sleeps at most this long, then looks whether that work
// still waits; a lazy sleeper (idle_protocol.hpp) relies on these looks for
// all but new processes. Waking a sleeper for every queued process would cost a
// thread wake-up (several us on the waker's side) per message of a busy
// network; this costs the sleeper one timer wake-up per interval while
// another worker is busy, and a fiber stuck behind a long-running process
// waits at most this long for a second core.
inline constexpr std::chrono::microseconds busy_watch{200};

}  // namespace csp::detail::tuning
