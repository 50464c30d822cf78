// The IO scheduler's registration table against a backend that records what
// it is asked to watch: interest is the union of the armed registrations,
// each arming delivers once, one-shots leave with their delivery, and every
// registration hears how it ended.
#include <gtest/gtest.h>

#include <map>
#include <optional>

#include "csp/alt.hpp"
#include "csp/runtime.hpp"
#include "iosched/registration_table.hpp"

namespace io = csp::io;
using io::detail::fd_event;
using io::detail::registration_table;
using io::readiness;

namespace {

class fake_backend final : public io::detail::backend {
public:
    std::map<int, short> interest;  // what the table wants watched now
    int forgets = 0;
    void set_interest(int fd, short events) override { interest[fd] = events; }
    void forget(int fd) override {
        ASSERT_EQ(interest.count(fd), 1u) << "forget of fd " << fd << " that was never watched";
        interest.erase(fd);
        ++forgets;
    }
    bool wait(csp::clock::time_point, std::vector<fd_event>&) override { return false; }
    void poll_now(std::vector<fd_event>&) override {}
};

// One registration's reply channel, as watch.cpp makes it.
struct waiter {
    csp::channel<readiness> ch{csp::buffer::overwriting(1), csp::sharing::one_to_one};
    csp::reader<readiness> in = ch.reader();
    // What was delivered and not yet taken.
    std::optional<readiness> taken() {
        readiness r;
        if (csp::select(csp::input(in, r), csp::skip()) == 0) return r;
        return std::nullopt;
    }
};

template <class F>
void in_runtime(F body) {
    csp::run([&] {
        fake_backend b;
        registration_table t(b);
        body(b, t);
    });
}

}  // namespace

TEST(registration_table, an_armed_registration_delivers_once_until_it_is_rearmed) {
    in_runtime([](fake_backend& b, registration_table& t) {
        waiter w;
        t.watch(5, 1, io::interest::read, false, w.ch.writer());
        EXPECT_EQ(b.interest.at(5), POLLIN);
        EXPECT_EQ(t.fds(), 1u);
        EXPECT_EQ(t.armed(), 1u);

        t.dispatch({{5, POLLIN}});
        auto r = w.taken();
        ASSERT_TRUE(r);
        EXPECT_EQ(r->what, readiness::status::ready);
        EXPECT_EQ(r->revents, POLLIN);
        EXPECT_EQ(b.interest.at(5), 0);  // disarmed: the fd is kept, not watched
        EXPECT_EQ(t.armed(), 0u);

        t.dispatch({{5, POLLIN}});  // level-triggered report before the owner confirmed
        EXPECT_FALSE(w.taken());

        t.rearm(5, 1);
        EXPECT_EQ(b.interest.at(5), POLLIN);
        t.dispatch({{5, POLLIN}});
        EXPECT_TRUE(w.taken());
        EXPECT_EQ(t.delivered(), 2u);
    });
}

TEST(registration_table, two_registrations_on_one_fd_get_their_own_events_and_both_hear_a_hangup) {
    in_runtime([](fake_backend& b, registration_table& t) {
        waiter r, w;
        t.watch(7, 1, io::interest::read, false, r.ch.writer());
        t.watch(7, 2, io::interest::write, false, w.ch.writer());
        EXPECT_EQ(b.interest.at(7), POLLIN | POLLOUT);
        EXPECT_EQ(t.fds(), 1u);

        t.dispatch({{7, POLLOUT}});
        EXPECT_FALSE(r.taken());
        auto got = w.taken();
        ASSERT_TRUE(got);
        EXPECT_EQ(got->revents, POLLOUT);
        EXPECT_EQ(b.interest.at(7), POLLIN);  // the writer is served, the reader still waits

        t.rearm(7, 2);
        t.dispatch({{7, POLLHUP}});
        auto a = r.taken(), c = w.taken();
        ASSERT_TRUE(a && c);
        EXPECT_EQ(a->revents, POLLHUP);
        EXPECT_EQ(c->revents, POLLHUP);
    });
}

TEST(registration_table, a_oneshot_leaves_with_its_delivery_and_the_last_registration_forgets_the_fd) {
    in_runtime([](fake_backend& b, registration_table& t) {
        waiter w;
        t.watch(3, 9, io::interest::write, true, w.ch.writer());
        t.dispatch({{3, POLLOUT | POLLIN}});
        auto got = w.taken();
        ASSERT_TRUE(got);
        EXPECT_EQ(got->revents, POLLOUT);  // only what it asked for
        EXPECT_EQ(b.interest.count(3), 0u);
        EXPECT_EQ(b.forgets, 1);
        EXPECT_EQ(t.fds(), 0u);
        t.rearm(3, 9);  // a confirmation that crossed the delivery: nothing to do
        EXPECT_EQ(b.interest.count(3), 0u);
    });
}

TEST(registration_table, cancel_removes_one_registration_and_unknown_ids_change_nothing) {
    in_runtime([](fake_backend& b, registration_table& t) {
        waiter r, w;
        t.watch(4, 1, io::interest::read, false, r.ch.writer());
        t.watch(4, 2, io::interest::write, false, w.ch.writer());
        t.cancel(4, 99);
        t.cancel(8, 1);
        EXPECT_EQ(b.interest.at(4), POLLIN | POLLOUT);
        t.cancel(4, 1);
        EXPECT_EQ(b.interest.at(4), POLLOUT);
        EXPECT_EQ(t.armed(), 1u);
        t.cancel(4, 2);
        EXPECT_EQ(b.interest.count(4), 0u);
        EXPECT_EQ(t.fds(), 0u);
        EXPECT_EQ(t.armed(), 0u);
        EXPECT_FALSE(r.taken());
        EXPECT_FALSE(w.taken());
    });
}

TEST(registration_table, close_tells_every_registration_and_forgets_the_fd) {
    in_runtime([](fake_backend& b, registration_table& t) {
        waiter r, w;
        t.watch(6, 1, io::interest::read, false, r.ch.writer());
        t.watch(6, 2, io::interest::write, false, w.ch.writer());
        t.dispatch({{6, POLLIN}});
        ASSERT_TRUE(r.taken());  // served, not confirmed: still told of the close
        t.close(6);
        auto a = r.taken(), c = w.taken();
        ASSERT_TRUE(a && c);
        EXPECT_EQ(a->what, readiness::status::closed);
        EXPECT_EQ(c->what, readiness::status::closed);
        EXPECT_EQ(b.interest.count(6), 0u);
        EXPECT_EQ(t.fds(), 0u);
        EXPECT_EQ(t.armed(), 0u);
        t.dispatch({{6, POLLIN}});  // a result of a poll made before the close
        EXPECT_FALSE(r.taken());
    });
}

TEST(registration_table, stop_all_tells_every_registration_it_stopped) {
    in_runtime([](fake_backend&, registration_table& t) {
        waiter a, c;
        t.watch(10, 1, io::interest::read, false, a.ch.writer());
        t.watch(11, 2, io::interest::read, true, c.ch.writer());
        t.stop_all();
        EXPECT_EQ(a.taken()->what, readiness::status::stopped);
        EXPECT_EQ(c.taken()->what, readiness::status::stopped);
        EXPECT_EQ(t.fds(), 0u);
        EXPECT_EQ(t.armed(), 0u);
    });
}

TEST(registration_table, a_negative_fd_is_answered_invalid_at_once) {
    in_runtime([](fake_backend& b, registration_table& t) {
        waiter w;
        t.watch(-1, 1, io::interest::read, false, w.ch.writer());
        auto got = w.taken();
        ASSERT_TRUE(got);
        EXPECT_EQ(got->revents, POLLNVAL);
        EXPECT_TRUE(b.interest.empty());
        EXPECT_EQ(t.fds(), 0u);
        EXPECT_EQ(t.armed(), 0u);
    });
}

TEST(registration_table, a_reply_channel_poisoned_by_its_owner_is_skipped) {
    in_runtime([](fake_backend&, registration_table& t) {
        waiter gone, kept;
        t.watch(12, 1, io::interest::read, false, gone.ch.writer());
        t.watch(12, 2, io::interest::read, false, kept.ch.writer());
        gone.in.poison();
        EXPECT_NO_THROW(t.dispatch({{12, POLLIN}}));
        EXPECT_TRUE(kept.taken());
        EXPECT_EQ(t.armed(), 0u);
    });
}
