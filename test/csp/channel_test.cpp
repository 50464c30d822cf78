#include <memory>
#include <string>
#include <vector>

#include "helpers.hpp"

using namespace std::chrono_literals;

namespace {

class channel_test : public csp_test::on_threads {};
CSP_ON_1_2_AND_4_THREADS(channel_test);

TEST_P(channel_test, rendezvous_write_completes_only_after_the_read) {
    csp::channel<int> c;
    std::vector<std::string> log;
    std::mutex m;
    auto note = [&](std::string s) {
        std::lock_guard lk(m);
        log.push_back(std::move(s));
    };
    csp::run(
        [&] {
            csp::par(
                [&, w = c.writer()] {
                    note("write begins");
                    w.write(7);
                    note("write returned");
                },
                [&, r = c.reader()] {
                    csp::sleep_for(20ms);
                    note("read begins");
                    EXPECT_EQ(r.read(), 7);
                });
        },
        opts());
    ASSERT_EQ(log.size(), 3u);
    EXPECT_EQ(log[0], "write begins");
    EXPECT_EQ(log[1], "read begins");
    EXPECT_EQ(log[2], "write returned");
}

TEST_P(channel_test, values_from_one_writer_arrive_in_order) {
    constexpr int n = 5000;
    csp::channel<int> c;
    std::vector<int> got;
    csp::run(
        [&] {
            csp::par(
                [w = c.writer()] {
                    for (int i = 0; i < n; ++i) w.write(i);
                },
                [&, r = c.reader()] {
                    for (int i = 0; i < n; ++i) got.push_back(r.read());
                });
        },
        opts());
    ASSERT_EQ(got.size(), static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) ASSERT_EQ(got[i], i);
}

TEST_P(channel_test, each_of_several_writers_keeps_its_own_order) {
    constexpr int writers = 4, per_writer = 2000;
    csp::channel<std::pair<int, int>> c{csp::buffer::fifo(3)};
    std::vector<int> last(writers, -1);
    csp::run(
        [&] {
            csp::par(
                [&] {
                    csp::par_for(writers, [&](std::size_t id) {
                        auto w = c.writer();
                        for (int i = 0; i < per_writer; ++i) w.write({static_cast<int>(id), i});
                    });
                },
                [&, r = c.reader()] {
                    for (int k = 0; k < writers * per_writer; ++k) {
                        auto [id, i] = r.read();
                        ASSERT_EQ(i, last[id] + 1) << "writer " << id;
                        last[id] = i;
                    }
                });
        },
        opts());
    for (int id = 0; id < writers; ++id) EXPECT_EQ(last[id], per_writer - 1);
}

TEST_P(channel_test, move_only_values_travel) {
    csp::channel<std::unique_ptr<int>> c;
    int got = 0;
    csp::run(
        [&] {
            csp::par([w = c.writer()] { w.write(std::make_unique<int>(42)); },
                     [&, r = c.reader()] { got = *r.read(); });
        },
        opts());
    EXPECT_EQ(got, 42);
}

TEST(channel_buffers, fifo_holds_n_values_then_blocks_the_writer) {
    csp::channel<int> c{csp::buffer::fifo(3)};
    int written = 0;
    csp::run([&] {
        csp::par(
            [&, w = c.writer()] {
                for (int i = 0; i < 5; ++i) {
                    w.write(i);
                    ++written;
                }
            },
            [&, r = c.reader()] {
                csp::sleep_for(20ms);
                EXPECT_EQ(written, 3);  // the fourth write waits for room
                EXPECT_EQ(c.buffered(), 3u);
                for (int i = 0; i < 5; ++i) EXPECT_EQ(r.read(), i);
            });
    });
    EXPECT_EQ(written, 5);
}

TEST(channel_buffers, unbounded_never_blocks_the_writer) {
    csp::channel<int> c{csp::buffer::unbounded()};
    csp::run([&] {
        auto w = c.writer();
        for (int i = 0; i < 10000; ++i) w.write(i);  // no reader yet
        EXPECT_EQ(c.buffered(), 10000u);
        auto r = c.reader();
        for (int i = 0; i < 10000; ++i) ASSERT_EQ(r.read(), i);
    });
}

TEST(channel_buffers, overwriting_keeps_the_newest_values) {
    csp::channel<int> c{"latest", csp::buffer::overwriting(3)};
    std::vector<int> got;
    csp::run([&] {
        auto w = c.writer();
        for (int i = 0; i < 10; ++i) w.write(i);
        EXPECT_EQ(c.buffered(), 3u);
        auto r = c.reader();
        for (int i = 0; i < 3; ++i) got.push_back(r.read());
    });
    EXPECT_EQ(got, (std::vector<int>{7, 8, 9}));
}

TEST(channel_buffers, zero_capacity_is_rejected_with_a_clear_error) {
    EXPECT_THROW(csp::buffer::fifo(0), csp::usage_error);
    try {
        csp::buffer::overwriting(0);
        FAIL();
    } catch (const csp::usage_error& e) {
        EXPECT_NE(std::string(e.what()).find("overwriting(0)"), std::string::npos);
    }
}

TEST_P(channel_test, one_to_any_delivers_each_message_to_exactly_one_reader) {
    constexpr int readers = 5, n = 3000;
    csp::channel<int> c{csp::sharing::one_to_any};
    std::vector<int> seen(n, 0);
    std::atomic<int> total{0};
    csp::run(
        [&] {
            csp::par(
                [w = c.writer()] {
                    for (int i = 0; i < n; ++i) w.write(i);
                    w.poison();
                },
                [&, r = c.reader()] {
                    csp::par_for(readers, [&](std::size_t) {
                        csp_test::read_until<csp::poisoned_error>(r, [&](int v) {
                            ++seen[v];  // distinct indices: no data race
                            ++total;
                        });
                    });
                });
        },
        opts());
    EXPECT_EQ(total.load(), n);
    for (int i = 0; i < n; ++i) ASSERT_EQ(seen[i], 1) << i;
}

TEST(channel_sharing, a_second_waiting_writer_on_a_one_to_one_channel_is_an_error) {
    csp::channel<int> c{"single", csp::sharing::one_to_one};
    std::string message;
    csp::run([&] {
        csp::par(
            [w = c.writer()] {
                try {
                    w.write(1);
                } catch (const csp::poisoned_error&) {
                }
            },
            [&, w = c.writer()] {
                csp::sleep_for(10ms);
                try {
                    w.write(2);
                } catch (const csp::usage_error& e) {
                    message = e.what();
                }
                c.poison();
            });
    });
    EXPECT_NE(message.find("channel 'single' has a single writer"), std::string::npos) << message;
}

TEST_P(channel_test, poison_wakes_every_blocked_reader_and_writer) {
    csp::channel<int> in{"in"}, out{"out"};
    std::atomic<int> woken_readers{0}, woken_writers{0};
    csp::run(
        [&] {
            csp::par(
                [&] {
                    csp::par_for(6, [&](std::size_t) {
                        try {
                            in.reader().read();
                        } catch (const csp::poisoned_error&) {
                            ++woken_readers;
                        }
                    });
                },
                [&] {
                    csp::par_for(4, [&](std::size_t i) {
                        try {
                            out.writer().write(static_cast<int>(i));
                        } catch (const csp::poisoned_error&) {
                            ++woken_writers;
                        }
                    });
                },
                [&] {
                    csp::sleep_for(20ms);
                    in.poison();
                    out.writer().poison();
                });
        },
        opts());
    EXPECT_EQ(woken_readers.load(), 6);
    EXPECT_EQ(woken_writers.load(), 4);
    EXPECT_TRUE(in.poisoned());
}

TEST(channel_poison, every_later_operation_throws_and_names_the_channel) {
    csp::channel<int> c{"results", csp::buffer::fifo(4)};
    csp::run([&] {
        c.writer().write(1);
        c.poison();
        try {
            c.reader().read();
            FAIL() << "read after poison returned";
        } catch (const csp::poisoned_error& e) {
            EXPECT_STREQ(e.what(), "channel 'results' is poisoned");
        }
        EXPECT_THROW(c.writer().write(2), csp::poisoned_error);
    });
}

TEST_P(channel_test, readers_see_retired_once_every_writer_retired_and_the_buffer_drained) {
    csp::channel<int> c{"pipe", csp::buffer::fifo(8)};
    std::vector<int> got;
    bool retired_seen = false;
    csp::run(
        [&] {
            csp::par(
                [w = c.writer()] {
                    for (int i = 0; i < 3; ++i) w.write(i);
                    w.retire();
                },
                [w = c.writer()] {
                    w.write(100);
                    w.retire();
                },
                [&, r = c.reader()] {
                    try {
                        for (;;) got.push_back(r.read());
                    } catch (const csp::retired_error& e) {
                        retired_seen = std::string(e.what()).find("every writer has retired") != std::string::npos;
                    }
                });
        },
        opts());
    EXPECT_TRUE(retired_seen);
    EXPECT_EQ(got.size(), 4u);
}

TEST(channel_retire, one_retired_holder_among_two_does_not_retire_the_side) {
    csp::channel<int> c;
    int got = -1;
    csp::run([&] {
        auto w1 = c.writer();
        auto w2 = c.writer();
        w1.retire();
        csp::par([&, r = c.reader()] { got = r.read(); }, [w2] { w2.write(5); });
    });
    EXPECT_EQ(got, 5);
}

TEST(channel_retire, writers_see_retired_when_every_reader_retired) {
    csp::channel<int> c{"sink"};
    csp::run([&] {
        csp::par(
            [r = c.reader()] { r.retire(); },
            [w = c.writer()] {
                csp::sleep_for(5ms);
                EXPECT_THROW(w.write(1), csp::retired_error);
            });
    });
}

TEST(channel_retire, a_retired_end_refuses_further_use) {
    csp::channel<int> c{"x"};
    csp::run([&] {
        auto w = c.writer();
        auto copy = w;
        w.retire();
        EXPECT_THROW(copy.write(1), csp::retired_error);  // copies are the same holder
    });
}

TEST(channel_ends, an_empty_end_gives_a_usage_error) {
    csp::reader<int> r;
    EXPECT_THROW(r.read(), csp::usage_error);
}

}  // namespace
