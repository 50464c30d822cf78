// A tag's fields (collectives/tag.hpp): stream, call, algorithm, sequence
// and step read back as written; the call and algorithm bits leave the rest
// alone; every collective of the registry has a call code of its own, and
// every algorithm a code of its own within its collective.
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <string>
#include <utility>

#include "collectives/collectives.hpp"
#include "collectives/detail/peer_context.hpp"
#include "csp/runtime.hpp"

namespace cc = csp::collectives;

namespace {

TEST(tag, fields_read_back_as_written_and_the_call_bits_touch_no_other) {
    const std::uint32_t last_stream = (1u << (64 - cc::tag::stream_shift)) - 1;
    const std::uint32_t last_sequence = (1u << 28) - 1;
    const cc::tag t(last_stream, last_sequence, 0xff);
    EXPECT_EQ(t.stream_id(), last_stream);
    EXPECT_EQ(t.sequence(), last_sequence);
    EXPECT_EQ(t.phase(), 0xff);
    EXPECT_EQ(t.call(), 0);
    EXPECT_EQ(t.algorithm(), 0);
    EXPECT_EQ(cc::tag(5, last_sequence + 1).sequence(), 0u);  // counted modulo 2^28, no other field touched
    EXPECT_EQ(cc::tag(5, last_sequence + 1), cc::tag(5, 0));
    const cc::tag c = t.of_call(cc::call_code("allreduce"));
    EXPECT_EQ(c.call(), cc::call_code("allreduce"));
    EXPECT_EQ(c.stream_id(), last_stream);
    EXPECT_EQ(c.sequence(), last_sequence);
    EXPECT_EQ(c.phase(), 0xff);
    EXPECT_EQ(c.step(3).call(), c.call());  // a step of a call stays that call's
    EXPECT_NE(c, t.of_call(cc::call_code("broadcast")));
    EXPECT_EQ(c.of_call(0), t.of_call(cc::call_code("broadcast")).of_call(0));
    EXPECT_EQ(c.of_call(0), t);

    const cc::tag a = c.of_algorithm(15);
    EXPECT_EQ(a.algorithm(), 15);
    EXPECT_EQ(a.call(), c.call());
    EXPECT_EQ(a.stream_id(), last_stream);
    EXPECT_EQ(a.sequence(), last_sequence);
    EXPECT_EQ(a.step(3).algorithm(), 15);  // a step of a call stays that algorithm's
    EXPECT_NE(a, c.of_algorithm(14));
    EXPECT_EQ(a.of_algorithm(0), c);
}

// Regression (net_test.cpp, ranks_whose_sizes_choose_different_algorithms_...):
// the tags of two algorithms of one collective were alike, so one could take
// the other's messages. Every algorithm's code is its own within its
// collective, and a tag drawn by it names it.
TEST(tag, every_algorithm_has_a_code_of_its_own_that_its_tags_carry_and_name) {
    std::set<std::pair<std::string, int>> codes;
    for (const auto& a : cc::registry::every_algorithm) {
        EXPECT_GT(a.code, 0) << a.qualified();
        EXPECT_LT(a.code, 15) << a.qualified();
        EXPECT_TRUE(codes.emplace(std::string(a.collective), a.code).second) << a.qualified();
        EXPECT_EQ(cc::algorithm_name(a.collective, a.code), a.name);
        const cc::tag t = cc::detail::marked(cc::tag(0, 9, 2), a);
        EXPECT_EQ(t.algorithm(), a.code);
        EXPECT_EQ(t.call(), cc::call_code(a.collective));
        std::string text;
        cc::detail::describe_tag(t, text);
        EXPECT_EQ(text,
                  "(stream 0, call 9 of " + std::string(a.collective) + " by " + std::string(a.name) + ", step 2)");
    }
    EXPECT_EQ(cc::algorithm_name("reduce", cc::aspen_reduce_info.code), "aspen");
    EXPECT_EQ(cc::algorithm_name("allreduce", 0), "");
    EXPECT_EQ(cc::algorithm_name("allreduce", 14), "");
}

TEST(tag, every_collective_of_the_registry_has_a_call_code_of_its_own) {
    std::set<std::string> collectives;
    auto note = [&](auto algorithm) { collectives.insert(std::string(algorithm.info.collective)); };
    cc::registry::broadcast::for_each(note);
    cc::registry::reduce::for_each(note);
    cc::registry::allreduce::for_each(note);
    cc::registry::barrier::for_each(note);
    cc::registry::gather::for_each(note);
    cc::registry::allgather::for_each(note);
    cc::registry::scatter::for_each(note);
    cc::registry::scan::for_each(note);
    cc::registry::exscan::for_each(note);
    cc::registry::reduce_scatter::for_each(note);
    cc::registry::alltoall::for_each(note);
    cc::registry::put_get::for_each(note);
    EXPECT_EQ(collectives.size(), std::size(cc::call_names));  // tag.hpp names each, and no other
    std::set<int> codes;
    for (const auto& c : collectives) {
        const auto code = cc::call_code(c);
        EXPECT_GT(code, 0) << c;
        EXPECT_LT(code, 31) << c << " is not in tag.hpp's call_names";
        EXPECT_EQ(cc::call_name(code), c);
        codes.insert(code);
    }
    EXPECT_EQ(codes.size(), collectives.size());
    EXPECT_EQ(cc::call_code("a collective from elsewhere"), 31);
}

// Regression: an error about a sub-group's call named its stream by its
// internal id ("(stream 65536, call 10, step 1)"), which no program wrote.
TEST(tag, a_groups_stream_is_named_as_the_program_passed_it_with_its_context) {
    std::string root, group;
    cc::detail::describe_tag(cc::tag(3, 14, 1).of_call(cc::call_code("allreduce")), root);
    cc::detail::describe_tag(cc::tag(cc::context_pool::stream_of(1, cc::stream{2}), 10, 1), group);
    EXPECT_EQ(root, "(stream 3, call 14 of allreduce, step 1)");
    EXPECT_EQ(group, "(stream 2 of the group with context 1, call 10, step 1)");
}

TEST(tag, a_stream_id_past_the_limit_is_refused_by_name) {
    cc::tag_counter counter;
    EXPECT_EQ(counter.next(cc::stream{cc::stream::limit - 1}).stream_id(), cc::stream::limit - 1);
    try {
        (void)counter.next(cc::stream{cc::stream::limit});
        ADD_FAILURE() << "accepted";
    } catch (const csp::usage_error& e) {
        EXPECT_NE(std::string(e.what()).find("collective stream id 65536 is out of range (at most 65535)"),
                  std::string::npos)
            << e.what();
    }
}

// Regression: rank 0 broadcast where the other ranks made an allreduce,
// and the allreduce folded the broadcast's value as rank 0's part (7 + 1 +
// 1). Ranks of one process meet on a shared board, without tags: each
// meeting now compares the ranks' collectives, and every rank refuses.
TEST(tag, ranks_making_different_collectives_on_a_shared_board_get_no_answer) {
    std::string error;
    std::atomic<int> answers{0};
    try {
        csp::run([&] {
            cc::run_local(3, [&](cc::local_communicator& c) {
                if (c.rank() == 0) {
                    (void)cc::broadcast(c, 7.0, 0);
                    (void)cc::allreduce(c, 1.0, cc::sum{});
                } else {
                    (void)cc::allreduce(c, 1.0, cc::sum{});
                    (void)cc::broadcast(c, 7.0, 0);
                }
                ++answers;
            });
        });
    } catch (const csp::usage_error& e) {
        error = e.what();
    }
    EXPECT_EQ(answers.load(), 0);
    const bool seen_by_0 = error.starts_with("broadcast: rank 1 met this call with a call of allreduce");
    const bool seen_by_others = error.starts_with("allreduce: rank 0 met this call with a call of broadcast");
    EXPECT_TRUE(seen_by_0 || seen_by_others) << error;
    EXPECT_NE(error.find("every rank must make the same collective calls in the same order"), std::string::npos);
}

}  // namespace
