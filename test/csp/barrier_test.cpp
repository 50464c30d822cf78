#include <atomic>
#include <vector>

#include "helpers.hpp"

using namespace std::chrono_literals;

namespace {

class barrier_test : public csp_test::on_threads {};
CSP_ON_1_2_AND_4_THREADS(barrier_test);

// No process may start phase p + 1 before every process finished phase p.
TEST_P(barrier_test, phases_keep_every_process_in_step) {
    constexpr int procs = 6, phases = 300;
    csp::barrier b(procs, "step");
    std::vector<std::atomic<int>> done_in_phase(phases);
    csp::run(
        [&] {
            csp::par_for(procs, [&](std::size_t) {
                for (int p = 0; p < phases; ++p) {
                    if (p > 0) {
                        ASSERT_EQ(done_in_phase[p - 1].load(), procs) << "phase " << p;
                    }
                    ++done_in_phase[p];
                    b.sync();
                }
            });
        },
        opts());
    EXPECT_EQ(b.phase(), static_cast<std::uint64_t>(phases));
}

TEST(barrier, enroll_adds_a_party_that_the_phase_waits_for) {
    csp::barrier b(1);
    std::vector<int> order;
    csp::run([&] {
        b.enroll();
        csp::par(
            [&] {
                b.sync();
                order.push_back(2);
            },
            [&] {
                csp::sleep_for(10ms);
                order.push_back(1);
                b.sync();
            });
    });
    ASSERT_EQ(order.size(), 2u);
    EXPECT_EQ(order[0], 1);
}

TEST(barrier, resign_releases_the_others_when_it_completes_the_phase) {
    csp::barrier b(3);
    std::atomic<int> passed{0};
    csp::run([&] {
        csp::par([&] { b.sync(), ++passed; }, [&] { b.sync(), ++passed; },
                 [&] {
                     csp::sleep_for(10ms);
                     EXPECT_EQ(passed.load(), 0);
                     b.resign();
                 });
    });
    EXPECT_EQ(passed.load(), 2);
    EXPECT_EQ(b.enrolled(), 2u);
    EXPECT_EQ(b.phase(), 1u);
}

TEST(barrier, misuse_is_reported) {
    csp::barrier b(0, "empty");
    csp::run([&] {
        try {
            b.sync();
            FAIL();
        } catch (const csp::usage_error& e) {
            EXPECT_STREQ(e.what(), "sync on barrier 'empty' with nobody enrolled");
        }
        EXPECT_THROW(b.resign(), csp::usage_error);
    });
}

}  // namespace
