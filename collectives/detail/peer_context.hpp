#pragma once
// A peer's failure as a collective's send or receive throws it: the same
// net::peer_error, its text followed by the message it ended ("node 1 has
// left (it closed its node) while this rank waited for a message from rank
// 1 with tag (stream 0, call 2 of allreduce by butterfly, step 0)"). A rank
// whose peers made fewer calls, or other ones, sees which of its calls
// they left it in.
#include <cstdint>
#include <string>
#include <string_view>

#include "collectives/algorithm.hpp"
#include "collectives/context_pool.hpp"
#include "collectives/tag.hpp"
#include "net/errors.hpp"

namespace csp::collectives::detail {

// " by butterfly": the algorithm that drew t; nothing for a tag no
// algorithm drew.
inline void describe_algorithm(tag t, std::string& out) {
    if (t.call() == 0) return;
    if (const auto a = algorithm_name(call_name(t.call()), t.algorithm()); !a.empty()) out.append(" by ").append(a);
}

// "(stream 0, call 2 of allreduce by butterfly, step 0)"; "(stream 0, call
// 2, step 0)" for a tag no collective drew. A sub-group's stream is named as its
// program passed it, with the group's context (context_pool.hpp): "(stream
// 0 of the group with context 1, ...)".
inline void describe_tag(tag t, std::string& out) {
    const std::uint32_t id = t.stream_id();
    out.append("(stream ");
    if (id < context_pool::group_streams) {
        out.append(std::to_string(id));
    } else {
        const std::uint32_t in_groups = id - context_pool::group_streams;
        out.append(std::to_string(in_groups % context_pool::streams_per_context))
            .append(" of the group with context ")
            .append(std::to_string(in_groups / context_pool::streams_per_context));
    }
    out.append(", call ").append(std::to_string(t.sequence()));
    if (t.call() != 0) out.append(" of ").append(call_name(t.call()));
    describe_algorithm(t, out);
    out.append(", step ").append(std::to_string(t.phase())).append(")");
}

// "a message from rank 1 with tag (...)", or "from any rank".
inline void describe_receive(int source, tag t, std::string& out) {
    out.append(source < 0 ? "a message from any rank" : "a message from rank " + std::to_string(source))
        .append(" with tag ");
    describe_tag(t, out);
}

// `also`: what the mailbox holds for other calls (mailbox.hpp).
[[noreturn]] inline void rethrow_receiving(const net::peer_error& e, int source, tag t, std::string_view also = {}) {
    std::string what = e.what();
    what.append(" while this rank waited for ");
    describe_receive(source, t, what);
    what.append(also);
    throw net::peer_error(e.peer(), what);
}

[[noreturn]] inline void rethrow_sending(const net::peer_error& e, int to, tag t) {
    std::string what = e.what();
    what.append(" while this rank sent rank ").append(std::to_string(to)).append(" a message with tag ");
    describe_tag(t, what);
    throw net::peer_error(e.peer(), what);
}

}  // namespace csp::collectives::detail
