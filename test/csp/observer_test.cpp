#include <map>
#include <mutex>

#include "helpers.hpp"

namespace {

class counting_observer : public csp::observer {
public:
    void on_event(const csp::event& e) override {
        std::lock_guard lk(m);
        ++counts[e.what];
    }
    std::mutex m;
    std::map<csp::event::kind, int> counts;
};

TEST(observer, sees_every_channel_operation_and_every_par) {
    counting_observer o;
    csp::channel<int> c;
    csp::set_observer(&o);
    csp::run([&] {
        csp::par(
            [w = c.writer()] {
                for (int i = 0; i < 10; ++i) w.write(i);
            },
            [r = c.reader()] {
                for (int i = 0; i < 10; ++i) r.read();
            });
    });
    csp::set_observer(nullptr);
    using k = csp::event::kind;
    EXPECT_EQ(o.counts[k::channel_write], 10);
    EXPECT_EQ(o.counts[k::channel_read], 10);
    EXPECT_EQ(o.counts[k::par_begin], 1);
    EXPECT_EQ(o.counts[k::par_end], 1);
    EXPECT_EQ(o.counts[k::process_begin], 3);  // root and two branches
    EXPECT_EQ(o.counts[k::process_end], 3);
}

TEST(observer, nothing_is_reported_once_removed) {
    counting_observer o;
    csp::set_observer(&o);
    csp::set_observer(nullptr);
    csp::run([] { csp::par([] {}); });
    EXPECT_TRUE(o.counts.empty());
}

}  // namespace
