// Benchmarks of the core, each next to its natural peer where there is one.
//
//   commstime/csp, commstime/boost_fiber   ns per communication, one thread
//   commstime/ratio                         csp / boost_fiber (target <= 0.5)
//   select/2, select/8                      priority select, one of n ready
//   buffered/csp, buffered/boost_fiber      ns per write + read through a buffer
//   buffered/ratio                          that never runs dry (one process, so
//                                           it never waits: a turn's cost)
//   spawn/csp, spawn/boost_fiber, spawn/ratio  start and join one process
//   fresh_stacks/csp, fresh_stacks/csp_unguarded, fresh_stacks/boost_fiber,
//   fresh_stacks/ratio                      ns per process of a run that starts
//                                           1,000 at once on stacks nobody used
//                                           yet (guarded: Boost's
//                                           protected_fixedsize_stack)
//   reused_stacks/csp, reused_stacks/ratio  the same run again and again: its
//                                           stacks come from the shelf (against
//                                           Boost's protected stacks, made anew)
//   commstime/csp_2_threads                 commstime on 2 workers (Go's peer:
//                                           bench/runtime_vs_go)
//   farm/threads:N, pipeline/threads:N      CPU-bound networks (about 50 us of
//                                           arithmetic per job): seconds per
//                                           run; farm/speedup, pipeline/speedup
//                                           = 1 thread / the most threads
//   producer_consumer/threads:N             a producer and a consumer, each
//                                           about 50 us of arithmetic per item
//   producer_consumer_grain/tenth_us/threads/T/N
//                                           the same pair at T/10 us a
//                                           stage: us_per_item
//   priority_latency/{idle,busy_prioritised,busy_equal}/threads:N
//                                           wake-up latency of a process while
//                                           100 others compute
//   par_after_ring/threads:2                a par of two 100 us branches right
//                                           after a ring ran on one worker:
//                                           par_us (median), branch_us
//   million_processes                       peak RSS per blocked process
//                                           (only with --benchmark_filter=million)
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <boost/fiber/all.hpp>

#include "bench/commstime_network.hpp"
#include "bench/peer_ratio.hpp"
#include "csp/csp.hpp"

namespace {

// The CPUs this benchmark may run on (as nproc counts them: taskset, a
// cpuset or a container may allow fewer than the machine has).
unsigned usable_cpus() {
    cpu_set_t mask;
    CPU_ZERO(&mask);
    if (::sched_getaffinity(0, sizeof mask, &mask) == 0) return static_cast<unsigned>(CPU_COUNT(&mask));
    return std::thread::hardware_concurrency();
}

}  // namespace

namespace {

using clock_type = std::chrono::steady_clock;

double elapsed_ns(clock_type::time_point since) {
    return std::chrono::duration<double, std::nano>(clock_type::now() - since).count();
}

// Commstime (bench/commstime_network.hpp): one benchmark iteration is one
// loop of the ring, four communications.
void commstime_csp(benchmark::State& state, std::size_t threads) {
    double ns = 0;
    try {
        csp::run(
            [&] {
                bench::commstime_network([&](const csp::reader<long>& in) {
                    const auto start = clock_type::now();
                    for (auto _ : state) benchmark::DoNotOptimize(in.read());
                    ns = elapsed_ns(start);
                });
            },
            {.threads = threads});
    } catch (const csp::poisoned_error&) {
    }
    const double per_comm = ns / (static_cast<double>(state.iterations()) * 4);
    state.counters["ns_per_comm"] = per_comm;
    if (threads == 1) bench::record("commstime/csp", per_comm);
}

void commstime_boost_fiber(benchmark::State& state) {
    using chan = boost::fibers::unbuffered_channel<long>;
    chan a, b, c, d;
    double ns = 0;
    boost::fibers::fiber prefix([&] {
        if (a.push(0) != boost::fibers::channel_op_status::success) return;
        long v;
        while (c.pop(v) == boost::fibers::channel_op_status::success &&
               a.push(v) == boost::fibers::channel_op_status::success) {
        }
    });
    boost::fibers::fiber delta([&] {
        long v;
        while (a.pop(v) == boost::fibers::channel_op_status::success &&
               d.push(v) == boost::fibers::channel_op_status::success &&
               b.push(v) == boost::fibers::channel_op_status::success) {
        }
    });
    boost::fibers::fiber succ([&] {
        long v;
        while (b.pop(v) == boost::fibers::channel_op_status::success &&
               c.push(v + 1) == boost::fibers::channel_op_status::success) {
        }
    });
    boost::fibers::fiber consumer([&] {
        long v;
        const auto start = clock_type::now();
        for (auto _ : state) {
            d.pop(v);
            benchmark::DoNotOptimize(v);
        }
        ns = elapsed_ns(start);
        a.close(), b.close(), c.close(), d.close();
    });
    consumer.join();
    prefix.join();
    delta.join();
    succ.join();
    const double per_comm = ns / (static_cast<double>(state.iterations()) * 4);
    state.counters["ns_per_comm"] = per_comm;
    bench::record("commstime/boost_fiber", per_comm);
}

// One process writes into a 64-slot buffer and reads back: no operation ever
// waits, so the process runs in turns of tuning::ops_per_turn reads
// (csp/detail/turn.hpp) and this measures what the turns cost. Boost.Fiber's
// buffered_channel (a lock-free ring, which never yields) does the same.
void buffered_csp(benchmark::State& state) {
    double ns = 0;
    csp::run([&] {
        csp::channel<long> c(csp::buffer::fifo(64));
        const auto w = c.writer();
        const auto r = c.reader();
        const auto start = clock_type::now();
        long i = 0;
        for (auto _ : state) {
            w.write(i++);
            benchmark::DoNotOptimize(r.read());
        }
        ns = elapsed_ns(start);
    });
    const double per_op = ns / static_cast<double>(state.iterations());
    state.counters["ns_per_write_read"] = per_op;
    bench::record("buffered/csp", per_op);
}

void buffered_boost_fiber(benchmark::State& state) {
    double ns = 0;
    boost::fibers::fiber f([&] {
        boost::fibers::buffered_channel<long> c(64);
        const auto start = clock_type::now();
        long i = 0, v = 0;
        for (auto _ : state) {
            c.push(i++);
            c.pop(v);
            benchmark::DoNotOptimize(v);
        }
        ns = elapsed_ns(start);
    });
    f.join();
    const double per_op = ns / static_cast<double>(state.iterations());
    state.counters["ns_per_write_read"] = per_op;
    bench::record("buffered/boost_fiber", per_op);
}

// One of n input guards is ready; the ready one is the last (priority select
// has to look past n - 1 empty channels).
void select_n(benchmark::State& state) {
    const auto n = static_cast<std::size_t>(state.range(0));
    std::vector<csp::channel<long>> chans(n);
    double ns = 0;
    csp::channel<long> stop;
    csp::run([&] {
        csp::par(
            [&, out = chans.back().writer()] {
                try {
                    for (long i = 0;; ++i) out.write(i);
                } catch (const csp::poisoned_error&) {
                }
            },
            [&] {
                std::vector<csp::input_guard<long>> guards;
                std::vector<csp::reader<long>> readers;
                long v = 0;
                for (auto& c : chans) readers.push_back(c.reader());
                guards.reserve(n);
                for (auto& r : readers) guards.emplace_back(r, v);
                std::vector<csp::guard*> gs;
                for (auto& g : guards) gs.push_back(&g);
                const auto start = clock_type::now();
                for (auto _ : state) benchmark::DoNotOptimize(csp::select(gs));
                ns = elapsed_ns(start);
                chans.back().poison();
            });
    });
    state.counters["ns_per_select"] = ns / static_cast<double>(state.iterations());
}

// Start one process and wait for it, against one raw Boost fiber.
void spawn_csp(benchmark::State& state) {
    double ns = 0;
    csp::run([&] {
        long sink = 0;
        const auto start = clock_type::now();
        for (auto _ : state) csp::par([&] { ++sink; });
        ns = elapsed_ns(start);
        benchmark::DoNotOptimize(sink);
    });
    state.counters["ns_per_spawn"] = ns / static_cast<double>(state.iterations());
    bench::record("spawn/csp", ns / static_cast<double>(state.iterations()));
}

void spawn_boost_fiber(benchmark::State& state) {
    long sink = 0;
    const auto start = clock_type::now();
    for (auto _ : state) boost::fibers::fiber([&] { ++sink; }).join();
    const double ns = elapsed_ns(start);
    benchmark::DoNotOptimize(sink);
    state.counters["ns_per_spawn"] = ns / static_cast<double>(state.iterations());
    bench::record("spawn/boost_fiber", ns / static_cast<double>(state.iterations()));
}

// A run that starts 1,000 processes at once, each on a stack carved for it:
// what a program pays once per stack of its peak (later processes, and later
// runs of the same shape, reuse them). A guarded stack adds an mprotect when
// carved and its share of the unmapping when its pool goes; Boost.Fiber's
// guarded stack is an mmap, an mprotect and an munmap per fiber.
constexpr int fresh_processes = 1000;

// A stack size no recent run used, so that no pool of that shape waits on
// the shelf: 64 KiB and up, a page more each call, over 64 sizes (the shelf
// holds at most two pools of this benchmark's size).
std::size_t unused_stack_size() {
    static std::size_t calls = 0;
    return 64 * 1024 + 4096 * (calls++ % 64);
}

// range(0): guard pages; range(1): a new stack size each run (fresh stacks)
// or the same one (stacks from the shelf).
void run_stacks_csp(benchmark::State& state) {
    const bool guard = state.range(0) != 0;
    const bool fresh = state.range(1) != 0;
    double ns = 0;
    long sink = 0;
    for (auto _ : state) {
        const std::size_t stack_size = fresh ? unused_stack_size() : 64 * 1024;
        const auto start = clock_type::now();
        csp::run([&] { csp::par_for(fresh_processes, [&](std::size_t i) { sink += static_cast<long>(i); }); },
                 {.stack_size = stack_size, .guard_pages = guard});
        ns += elapsed_ns(start);
    }
    benchmark::DoNotOptimize(sink);
    const double per = ns / (static_cast<double>(state.iterations()) * fresh_processes);
    state.counters["ns_per_process"] = per;
    bench::record(!fresh ? "reused_stacks/csp" : guard ? "fresh_stacks/csp" : "fresh_stacks/csp_unguarded", per);
}

void fresh_stacks_boost_fiber(benchmark::State& state) {
    double ns = 0;
    long sink = 0;
    for (auto _ : state) {
        const auto start = clock_type::now();
        std::vector<boost::fibers::fiber> fibers;
        fibers.reserve(fresh_processes);
        for (int i = 0; i < fresh_processes; ++i)
            fibers.emplace_back(std::allocator_arg, boost::fibers::protected_fixedsize_stack(64 * 1024),
                                [&sink, i] { sink += i; });
        for (auto& f : fibers) f.join();
        ns += elapsed_ns(start);
    }
    benchmark::DoNotOptimize(sink);
    const double per = ns / (static_cast<double>(state.iterations()) * fresh_processes);
    state.counters["ns_per_process"] = per;
    bench::record("fresh_stacks/boost_fiber", per);
}

long peak_rss_kib() {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line))
        if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
    return -1;
}

// n processes all blocked reading one shared channel, then released one value
// each. Reports the growth of peak RSS divided by n. The processes run on
// 3 KiB stacks (runtime_options::stack_size), packed with no gaps: a reader
// writes about 2.2 KiB deep over its life (stack_test.cpp), and the stacks
// have no guard page, so this leaves 0.8 KiB to spare. With stacks of a page
// or more, each blocked process costs one page.
void million_processes(benchmark::State& state) {
    const auto n = static_cast<std::size_t>(state.range(0));
    constexpr std::size_t stack_size = 2 * 1024;
    for (auto _ : state) {
        const long before = peak_rss_kib();
        csp::channel<int> shared{"shared"};
        long received = 0;
        csp::run(
            [&] {
                csp::par(
                    [&, in = shared.reader()] {
                        csp::par_for(n, [&](std::size_t) { received += in.read(); });
                    },
                    [&, out = shared.writer()] {
                        for (std::size_t i = 0; i < n; ++i) out.write(1);
                    });
            },
            {.stack_size = stack_size});
        const long after = peak_rss_kib();
        if (received != static_cast<long>(n)) state.SkipWithError("lost messages");
        state.counters["rss_bytes_per_process"] =
            static_cast<double>(after - before) * 1024.0 / static_cast<double>(n);
        state.counters["stack_bytes"] = static_cast<double>(stack_size);
    }
}

// About `us` microseconds of arithmetic that the compiler cannot drop.
std::uint64_t work_iterations_per_us = 0;

std::uint64_t compute(std::uint64_t seed, std::uint64_t iterations) {
    std::uint64_t x = seed | 1;
    for (std::uint64_t i = 0; i < iterations; ++i) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return x;
}

std::uint64_t iterations_for(double us) {
    if (work_iterations_per_us == 0) {
        const std::uint64_t n = 50'000'000;
        const auto start = clock_type::now();
        benchmark::DoNotOptimize(compute(1, n));
        work_iterations_per_us = static_cast<std::uint64_t>(n / (elapsed_ns(start) / 1000.0));
    }
    return static_cast<std::uint64_t>(us * static_cast<double>(work_iterations_per_us));
}

// A producer, `workers` workers on one shared channel, a collector: each of
// `jobs` jobs costs about 50 us of arithmetic.
void farm(benchmark::State& state) {
    const auto threads = static_cast<std::size_t>(state.range(0));
    constexpr std::size_t workers = 16, jobs = 4000;
    const std::uint64_t iters = iterations_for(50);
    for (auto _ : state) {
        csp::channel<std::uint64_t> todo, done;
        std::uint64_t sum = 0;
        csp::run(
            [&] {
                csp::par(
                    [&, out = todo.writer()] {
                        for (std::size_t j = 0; j < jobs; ++j) out.write(j);
                        out.retire();
                    },
                    [&] {
                        csp::par_for(workers, [&](std::size_t) {
                            auto in = todo.reader();
                            auto out = done.writer();
                            try {
                                for (;;) out.write(compute(in.read(), iters));
                            } catch (const csp::retired_error&) {
                            }
                        });
                    },
                    [&, in = done.reader()] {
                        for (std::size_t j = 0; j < jobs; ++j) sum += in.read();
                    });
            },
            {.threads = threads});
        benchmark::DoNotOptimize(sum);
    }
    state.counters["nproc"] = static_cast<double>(usable_cpus());
}

// Four stages in a line, each about 50 us of arithmetic per item.
void pipeline(benchmark::State& state) {
    const auto threads = static_cast<std::size_t>(state.range(0));
    constexpr std::size_t stages = 4, items = 1000;
    const std::uint64_t iters = iterations_for(50);
    for (auto _ : state) {
        std::vector<csp::channel<std::uint64_t>> links(stages + 1);
        std::uint64_t sum = 0;
        csp::run(
            [&] {
                csp::par(
                    [&, out = links[0].writer()] {
                        for (std::size_t j = 0; j < items; ++j) out.write(j);
                    },
                    [&] {
                        csp::par_for(stages, [&](std::size_t s) {
                            auto in = links[s].reader();
                            auto out = links[s + 1].writer();
                            for (std::size_t j = 0; j < items; ++j) out.write(compute(in.read(), iters));
                        });
                    },
                    [&, in = links[stages].reader()] {
                        for (std::size_t j = 0; j < items; ++j) sum += in.read();
                    });
            },
            {.threads = threads});
        benchmark::DoNotOptimize(sum);
    }
    state.counters["nproc"] = static_cast<double>(usable_cpus());
}

// One run of the pair: `items` items of `iters` iterations each way on
// `threads` workers. False if the consumer did not get every item.
bool run_producer_consumer(std::size_t threads, std::size_t items, std::uint64_t iters) {
    csp::channel<std::uint64_t> link;
    std::uint64_t sum = 0;
    std::size_t consumed = 0;
    csp::run(
        [&] {
            csp::par(
                [&, out = link.writer()] {
                    for (std::size_t j = 0; j < items; ++j) out.write(compute(j, iters));
                },
                [&, in = link.reader()] {
                    for (std::size_t j = 0; j < items; ++j, ++consumed) sum += compute(in.read(), iters);
                });
        },
        {.threads = threads});
    benchmark::DoNotOptimize(sum);
    return consumed == items;
}

// A producer that computes each item (about 50 us) and writes it to a
// consumer that computes with it as long: the smallest program that should
// use two cores. The consumer, woken by the write, waits in the producer's
// worker's run-next slot while the producer computes the next item, until
// the other worker takes it; later items go straight to that worker. Go's
// peer: bench/go/core_ops.go -bench producer_consumer.
void producer_consumer(benchmark::State& state) {
    const auto threads = static_cast<std::size_t>(state.range(0));
    const std::uint64_t iters = iterations_for(50);
    for (auto _ : state)
        if (!run_producer_consumer(threads, 1000, iters)) state.SkipWithError("lost items");
    state.counters["nproc"] = static_cast<double>(usable_cpus());
}

// The same pair with less arithmetic per item: range(0) tenths of a
// microsecond a stage, on range(1) threads; us_per_item reports the cost of one
// item. Below about 5 us a stage one worker doing both is the best two can
// do; above, the pair should run on two cores. Go's peer: core_ops.go
// -bench producer_consumer -us N.
void producer_consumer_grain(benchmark::State& state) {
    const double us = static_cast<double>(state.range(0)) / 10;
    const auto threads = static_cast<std::size_t>(state.range(1));
    const auto items = static_cast<std::size_t>(50'000 / us);
    const std::uint64_t iters = iterations_for(us);
    double total_us = 0;
    for (auto _ : state) {
        const auto start = clock_type::now();
        if (!run_producer_consumer(threads, items, iters)) state.SkipWithError("lost items");
        total_us += elapsed_ns(start) / 1000.0;
    }
    state.counters["us_per_item"] = total_us / static_cast<double>(state.iterations() * items);
}

// A process waits for timestamps written by the first of `busy` processes,
// which all compute in 5 us slices and yield between them. Reports the mean
// and the 90th percentile of the time from the write to the reader running.
// `prioritised`: the reader runs at priority_high, the others at normal;
// otherwise all at normal. Go's peer (bench/go/core_ops.go -bench latency)
// has no priorities: it matches `idle` and `busy_equal`.
void priority_latency(benchmark::State& state, std::size_t busy, bool prioritised) {
    const auto threads = static_cast<std::size_t>(state.range(0));
    const std::uint64_t slice = iterations_for(5);
    constexpr std::size_t samples = 400;
    std::vector<double> waits(samples);
    for (auto _ : state) {
        csp::channel<clock_type::time_point> stamps;
        std::atomic<bool> stop{false};
        csp::run(
            [&] {
                csp::par(
                    [&, in = stamps.reader()] {
                        if (prioritised) csp::this_process::set_priority(csp::priority_high);
                        for (double& w : waits) w = elapsed_ns(in.read());
                        stop = true;
                    },
                    [&] {
                        csp::par_for(std::max<std::size_t>(busy, 1), [&](std::size_t k) {
                            auto out = stamps.writer();
                            for (std::uint64_t round = 0; !stop; ++round) {
                                benchmark::DoNotOptimize(compute(round, slice));
                                if (k == 0 && round % 4 == 0 && !stop) {
                                    out.write(clock_type::now());
                                }
                                csp::yield();
                            }
                        });
                    });
            },
            {.threads = threads});
    }
    const double total_ns = std::accumulate(waits.begin(), waits.end(), 0.0);
    std::sort(waits.begin(), waits.end());
    state.counters["latency_us"] = total_ns / samples / 1000.0;
    state.counters["p90_us"] = waits[samples * 9 / 10] / 1000.0;
}

// A par of two branches of about 100 us of arithmetic each, started as soon
// as Commstime's ring has run 500 loops (2,000 messages) on one worker, the
// other idle after wake-ups for work it could not take. par_us: the par's
// median time over 200 rounds; branch_us: one branch's time alone. On two
// workers the par takes about branch_us, on one twice that. Go's peer:
// bench/go/core_ops.go -bench par_after_ring.
void par_after_ring(benchmark::State& state) {
    const auto threads = static_cast<std::size_t>(state.range(0));
    const std::uint64_t iters = iterations_for(100);
    constexpr std::size_t rounds = 200;
    constexpr long loops = 500;
    std::vector<double> pars, alone;
    auto median = [](std::vector<double>& v) {
        std::sort(v.begin(), v.end());
        return v[v.size() / 2];
    };
    for (auto _ : state) {
        pars.clear();
        alone.clear();
        for (std::size_t r = 0; r < 20; ++r) {
            const auto start = clock_type::now();
            benchmark::DoNotOptimize(compute(r, iters));
            alone.push_back(elapsed_ns(start) / 1000.0);
        }
        long loops_run = 0;
        csp::run(
            [&] {
                for (std::size_t r = 0; r < rounds; ++r) {
                    try {
                        bench::commstime_network([&](const csp::reader<long>& in) {
                            for (long i = 0; i < loops; ++i) loops_run += in.read() >= 0;
                        });
                    } catch (const csp::poisoned_error&) {
                    }
                    const auto start = clock_type::now();
                    std::uint64_t x = 0, y = 0;
                    csp::par([&] { x = compute(r, iters); }, [&] { y = compute(r + 1, iters); });
                    pars.push_back(elapsed_ns(start) / 1000.0);
                    benchmark::DoNotOptimize(x + y);
                }
            },
            {.threads = threads});
        if (loops_run != static_cast<long>(rounds) * loops) state.SkipWithError("the ring lost messages");
    }
    state.counters["par_us"] = median(pars);
    state.counters["branch_us"] = median(alone);
}

}  // namespace

BENCHMARK_CAPTURE(commstime_csp, csp, 1)->Name("commstime/csp")->UseRealTime();
BENCHMARK(commstime_boost_fiber)->Name("commstime/boost_fiber")->UseRealTime();
BENCHMARK_CAPTURE(commstime_csp, csp_2_threads, 2)->Name("commstime/csp_2_threads")->UseRealTime();
BENCHMARK(buffered_csp)->Name("buffered/csp")->UseRealTime();
BENCHMARK(buffered_boost_fiber)->Name("buffered/boost_fiber")->UseRealTime();
BENCHMARK(select_n)->Name("select")->Arg(2)->Arg(8)->UseRealTime();
BENCHMARK(spawn_csp)->Name("spawn/csp")->UseRealTime();
BENCHMARK(spawn_boost_fiber)->Name("spawn/boost_fiber")->UseRealTime();
BENCHMARK(run_stacks_csp)->Name("fresh_stacks/csp")->Args({1, 1})->UseRealTime();
BENCHMARK(run_stacks_csp)->Name("fresh_stacks/csp_unguarded")->Args({0, 1})->UseRealTime();
BENCHMARK(fresh_stacks_boost_fiber)->Name("fresh_stacks/boost_fiber")->UseRealTime();
BENCHMARK(run_stacks_csp)->Name("reused_stacks/csp")->Args({1, 0})->UseRealTime();
BENCHMARK(farm)->Name("farm/threads")->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
BENCHMARK(pipeline)
    ->Name("pipeline/threads")
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(3);
BENCHMARK(producer_consumer)
    ->Name("producer_consumer/threads")
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(3);
BENCHMARK(producer_consumer_grain)
    ->Name("producer_consumer_grain/tenth_us/threads")
    ->ArgsProduct({{25, 50, 100, 200}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(3);
BENCHMARK_CAPTURE(priority_latency, idle, 1, false)
    ->Name("priority_latency/idle/threads")
    ->Arg(1)
    ->Arg(2)
    ->Iterations(1)
    ->UseRealTime();
BENCHMARK_CAPTURE(priority_latency, busy_prioritised, 100, true)
    ->Name("priority_latency/busy_prioritised/threads")
    ->Arg(1)
    ->Arg(2)
    ->Iterations(1)
    ->UseRealTime();
BENCHMARK_CAPTURE(priority_latency, busy_equal, 100, false)
    ->Name("priority_latency/busy_equal/threads")
    ->Arg(1)
    ->Arg(2)
    ->Iterations(1)
    ->UseRealTime();
BENCHMARK(par_after_ring)->Name("par_after_ring/threads")->Arg(2)->Iterations(1)->UseRealTime();
BENCHMARK(million_processes)->Name("million_processes")->Arg(1'000'000)->Iterations(1)->UseRealTime();

int main(int argc, char** argv) {
    bench::register_ratio("commstime/ratio", "commstime/csp", "commstime/boost_fiber");
    bench::register_ratio("spawn/ratio", "spawn/csp", "spawn/boost_fiber");
    bench::register_ratio("buffered/ratio", "buffered/csp", "buffered/boost_fiber");
    bench::register_ratio("fresh_stacks/ratio", "fresh_stacks/csp", "fresh_stacks/boost_fiber");
    bench::register_ratio("reused_stacks/ratio", "reused_stacks/csp", "fresh_stacks/boost_fiber");
    // On machines with more cores, the CPU-bound networks also run on up to
    // nproc workers (1 and 2 are registered above).
    for (unsigned t = 4; t <= usable_cpus(); t *= 2) {
        benchmark::RegisterBenchmark("farm/threads", farm)
            ->Arg(t)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime()
            ->Iterations(3);
        benchmark::RegisterBenchmark("pipeline/threads", pipeline)
            ->Arg(t)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime()
            ->Iterations(3);
    }
    // The million-process run takes a few GiB and many seconds: only on request.
    bool filtered = false;
    for (int i = 1; i < argc; ++i) filtered = filtered || std::string(argv[i]).rfind("--benchmark_filter", 0) == 0;
    std::vector<char*> args(argv, argv + argc);
    std::string default_filter = "--benchmark_filter=-million";
    if (!filtered) args.push_back(default_filter.data());
    int count = static_cast<int>(args.size());
    benchmark::Initialize(&count, args.data());
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
}
