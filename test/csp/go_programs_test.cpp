// Programs from Go's channel test suite (test/chan/), rewritten for csp.
#include <array>
#include <vector>

#include "helpers.hpp"

namespace {

class go_programs : public csp_test::on_threads {};
CSP_ON_1_2_AND_4_THREADS(go_programs);

// sieve1.go: a chain of filter processes, one per prime found.
TEST_P(go_programs, prime_sieve) {
    constexpr int primes_wanted = 100;
    std::vector<int> primes;
    csp::run(
        [&] {
            csp::channel<int> first;
            std::vector<csp::channel<int>> filters;
            filters.reserve(primes_wanted);
            csp::par(
                [w = first.writer()] {
                    try {
                        for (int i = 2;; ++i) w.write(i);
                    } catch (const csp::poisoned_error&) {
                    }
                },
                [&, first] {
                    csp::reader<int> in = first.reader();
                    std::vector<csp::channel<int>> chans;
                    // Each new prime p starts a filter between `in` and a new channel.
                    std::function<void(csp::reader<int>, int)> spawn_chain = [&](csp::reader<int> src, int found) {
                        const int p = src.read();
                        primes.push_back(p);
                        if (found + 1 == primes_wanted) {
                            src.poison();
                            return;
                        }
                        csp::channel<int> next;
                        csp::par(
                            [src, p, out = next.writer()] {
                                try {
                                    for (;;) {
                                        const int v = src.read();
                                        if (v % p != 0) out.write(v);
                                    }
                                } catch (const csp::poisoned_error&) {
                                    src.poison();  // stop the whole chain, both ways
                                    out.poison();
                                }
                            },
                            [&, r = next.reader()] { spawn_chain(r, found + 1); });
                    };
                    spawn_chain(in, 0);
                });
        },
        opts());
    ASSERT_EQ(primes.size(), static_cast<std::size_t>(primes_wanted));
    EXPECT_EQ(primes[0], 2);
    EXPECT_EQ(primes[9], 29);
    EXPECT_EQ(primes[99], 541);
}

// fifo.go: values through a chain of buffered and unbuffered channels keep
// their order.
TEST_P(go_programs, fifo_through_a_chain) {
    constexpr int n = 10, links = 20;
    std::vector<csp::channel<int>> chain;
    for (int i = 0; i <= links; ++i)
        chain.push_back(i % 2 ? csp::channel<int>(csp::buffer::fifo(3)) : csp::channel<int>());
    std::vector<int> out;
    csp::run(
        [&] {
            csp::par(
                [&] {
                    auto w = chain[0].writer();
                    for (int i = 0; i < n; ++i) w.write(i);
                },
                [&] {
                    csp::par_for(links, [&](std::size_t k) {
                        auto r = chain[k].reader();
                        auto w = chain[k + 1].writer();
                        for (int i = 0; i < n; ++i) w.write(r.read());
                    });
                },
                [&] {
                    auto r = chain[links].reader();
                    for (int i = 0; i < n; ++i) out.push_back(r.read());
                });
        },
        opts());
    for (int i = 0; i < n; ++i) EXPECT_EQ(out[i], i);
}

// select3.go / nonblock.go: a select with a default (skip) never blocks, and
// finds a value as soon as one is offered.
TEST(go_programs_single, non_blocking_select) {
    csp::channel<int> unbuffered, buffered{csp::buffer::fifo(1)};
    csp::run([&] {
        int v = 0;
        auto ru = unbuffered.reader(), rb = buffered.reader();
        auto wu = unbuffered.writer(), wb = buffered.writer();
        // Nothing anywhere: default.
        EXPECT_EQ(csp::select(csp::input(ru, v), csp::skip()), 1u);
        EXPECT_EQ(csp::select(csp::output(wu, 1), csp::skip()), 1u);
        // A buffered channel with room takes a non-blocking send...
        EXPECT_EQ(csp::select(csp::output(wb, 2), csp::skip()), 0u);
        // ...and then is full.
        EXPECT_EQ(csp::select(csp::output(wb, 3), csp::skip()), 1u);
        EXPECT_EQ(csp::select(csp::input(rb, v), csp::skip()), 0u);
        EXPECT_EQ(v, 2);
        // An unbuffered send succeeds without blocking once a reader waits.
        csp::par([&] { EXPECT_EQ(ru.read(), 7); },
                 [&] {
                     while (csp::select(csp::output(wu, 7), csp::skip()) == 1) csp::yield();
                 });
    });
}

// select.go: a select over two always-ready channels chooses each about half
// the time.
TEST(go_programs_single, select_fairness) {
    constexpr int trials = 10000;
    csp::channel<int> a{csp::buffer::fifo(1)}, b{csp::buffer::fifo(1)};
    std::array<int, 2> hits{};
    csp::run([&] {
        auto wa = a.writer(), wb = b.writer();
        auto ra = a.reader(), rb = b.reader();
        csp::alternation alt;
        int v = 0;
        for (int i = 0; i < trials; ++i) {
            if (a.buffered() == 0) wa.write(0);
            if (b.buffered() == 0) wb.write(1);
            ++hits[alt.fair_select(csp::input(ra, v), csp::input(rb, v))];
        }
    });
    EXPECT_NEAR(hits[0], trials / 2, trials / 20);
    EXPECT_NEAR(hits[1], trials / 2, trials / 20);
}

}  // namespace
