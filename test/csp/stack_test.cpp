// How deep processes write into their stacks: what decides how small a
// stack may be (runtime_options::stack_size) and what a blocked process costs.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <system_error>
#include <thread>

#include <sys/resource.h>

#include "csp/detail/fiber_internals.hpp"
#include "helpers.hpp"

namespace {

class stacks : public csp_test::on_threads {};
CSP_ON_1_2_AND_4_THREADS(stacks);

// Runs n readers blocked on one channel, released one value each, with the
// stack pool measuring how deep each process wrote; returns the deepest.
std::size_t deepest_reader(csp::runtime_options o) {

    constexpr std::size_t n = 300;
    std::shared_ptr<csp::detail::stack_pool> pool;
    // Readers run on several workers at once: the count is atomic (a plain
    // long lost an increment now and then on two workers).
    std::atomic<long> received{0};
    o.stack_size = 64 * 1024;
    csp::detail::stack_pool::clear_shelf();  // stacks an earlier run wrote would count
    csp_test::run_watched(
        [&] {
            pool = csp::detail::current_process()->runtime()->stack_store();
            pool->watch_depth();
            csp::channel<int> shared{"shared"};
            csp::par([&, in = shared.reader()] { csp::par_for(n, [&](std::size_t) { received += in.read(); }); },
                     [&, out = shared.writer()] {
                         for (std::size_t i = 0; i < n; ++i) out.write(1);
                     });
        },
        o);
    EXPECT_EQ(received.load(), static_cast<long>(n));
    EXPECT_GT(pool->deepest(), 512u) << "the watch saw no stack at all";
    return pool->deepest();
}

// Stack depths are measured without AddressSanitizer, whose redzones
// enlarge every frame.
#if defined(__SANITIZE_ADDRESS__)
#define SKIP_UNDER_SANITIZERS() GTEST_SKIP() << "stack depths are not measured under AddressSanitizer"
#else
#define SKIP_UNDER_SANITIZERS() (void)0
#endif

// A blocked reader, its release and its exit take about 1.8 KiB here; the
// par's own processes, or an exit that goes looking for work to steal, up to
// about 1.9 KiB (1,816 bytes on one worker, 1,912 on two, 1,912-1,928 on
// four). An exit that read the clock two frames further down, in
// has_waited, reached 2,016 on four workers in about one run of 100. All of
// them must fit the 2 KiB stacks of million_processes (bench/csp_bench.cpp):
// 2,048 bytes less the canary word and a margin of 56.
constexpr std::size_t reader_bound = 1984;

// Boost's spinlocks seed a thread-local generator from a std::random_device
// built on the stack of the first fiber to lock one on a thread: once per
// thread, some process wrote 9.7 KiB deep. Each worker now takes those locks
// on its own stack first (fiber_internals.hpp warm_up_thread).
TEST_P(stacks, no_process_writes_ten_kib_deep_for_boosts_spinlock_generator) {
    SKIP_UNDER_SANITIZERS();
    EXPECT_LT(deepest_reader(opts()), reader_bound);
}

// The first call of a libstdc++ or libc function through a lazily bound PLT
// ran the dynamic linker's resolver on a process's stack (5 KiB deep, on two
// workers, in a fresh process: ctest runs each test in its own). The runtime
// makes those calls once on a thread stack first (runtime.cpp).
TEST_P(stacks, no_process_runs_the_dynamic_linkers_resolver_on_its_stack) {
    SKIP_UNDER_SANITIZERS();
    EXPECT_LT(deepest_reader(opts()), reader_bound);
}

// Boost's spinlock lock() reserves 5 KiB of frame for its generator's
// std::random_device and, when contended, calls out from below it: a process
// parking while a worker held its park lock wrote 6,664 bytes deep (one run
// in about 150 on four workers). The park lock, and every Boost spinlock a
// process takes, is taken with lock_shallow, which has no frame.
TEST(park_lock, when_contended_is_taken_without_boosts_five_kib_frame) {
    SKIP_UNDER_SANITIZERS();
    boost::fibers::detail::spinlock lock;
    std::atomic<bool> trying{false};
    std::thread holder([&] {
        lock.lock();  // on this thread's own stack
        while (!trying.load()) std::this_thread::yield();
        std::this_thread::sleep_for(std::chrono::milliseconds(5));  // long enough for Boost's lock() to yield
        lock.unlock();
    });
    std::shared_ptr<csp::detail::stack_pool> pool;
    bool taken = false;
    csp::runtime_options o;
    o.stack_size = 64 * 1024;
    csp::detail::stack_pool::clear_shelf();  // stacks an earlier run wrote would count
    csp_test::run_watched(
        [&] {
            pool = csp::detail::current_process()->runtime()->stack_store();
            pool->watch_depth();
            csp::par([&] {
                trying = true;
                auto held = csp::detail::fiber::lock_shallow(lock);
                taken = held.owns_lock();
            });
        },
        o);
    holder.join();
    EXPECT_TRUE(taken);
    EXPECT_GT(pool->deepest(), 256u) << "the watch saw no stack at all";
    EXPECT_LT(pool->deepest(), reader_bound);
}

// Stacks have no guard page (stack_pool.hpp); a canary in the lowest word of
// each stack turns an overflow into a message that names the stack size.
TEST(stack_pool, a_stack_written_past_its_bottom_stops_the_program_naming_its_size) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(
        {
            csp::detail::stack_pool pool(4096);
            boost::context::stack_context sc = pool.allocate();
            std::memset(static_cast<char*>(sc.sp) - sc.size, 0xab, 16);  // the last bytes of an overflow
            pool.deallocate(sc);
        },
        "past the bottom of its 4096-byte stack");
}

TEST(stack_pool, a_stack_used_within_its_size_comes_back_quietly) {
    csp::detail::stack_pool pool(4096);
    boost::context::stack_context sc = pool.allocate();
    std::memset(static_cast<char*>(sc.sp) - sc.size + 8, 0xab, sc.size - 16);  // all but the canary
    pool.deallocate(sc);
    boost::context::stack_context again = pool.allocate();
    EXPECT_EQ(again.sp, sc.sp) << "a returned stack is reused first";
    pool.deallocate(again);
}

#if !defined(__SANITIZE_ADDRESS__)
// In a death test's child: leaves the address space room for a few thread
// stacks, asks for 200 workers, then runs again with 2.
[[noreturn]] void start_workers_with_little_address_space() {
    std::ifstream status("/proc/self/status");
    std::string line;
    std::size_t kib = 0;
    while (std::getline(status, line))
        if (line.rfind("VmSize:", 0) == 0) kib = std::stoul(line.substr(7));
    const rlim_t room = (kib + 48 * 1024) * 1024;
    const rlimit limit{room, room};
    if (kib == 0 || ::setrlimit(RLIMIT_AS, &limit) != 0) std::_Exit(3);
    try {
        csp::run([] {}, {.threads = 200});
        std::_Exit(4);
    } catch (const std::system_error& e) {
        std::fprintf(stderr, "refused: %s\n", e.what());
    }
    std::fprintf(stderr, "then: %d\n", csp::run([] { return 7; }, {.threads = 2}));
    std::fflush(stderr);
    std::_Exit(0);
}
#endif

// Regression: a worker thread that could not get its stack (here: an
// address-space limit that leaves room for a few 8 MiB thread stacks)
// ended the program with "terminate called without an active exception",
// the workers already started still joinable. Now they are stopped, run()
// throws std::system_error saying how many started, and a later run works.
// (AddressSanitizer needs room of its own past such a limit.)
TEST(worker_threads, a_worker_that_cannot_get_its_stack_stops_the_others_and_run_says_how_many_started) {
#if defined(__SANITIZE_ADDRESS__)
    GTEST_SKIP() << "an address-space limit leaves AddressSanitizer no room";
#else
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(start_workers_with_little_address_space(), ::testing::ExitedWithCode(0),
        "refused: csp::run could start only [0-9]+ of the 200 worker threads asked for: .*\n"
        "then: 7");
#endif
}

}  // namespace
