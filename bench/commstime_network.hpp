#pragma once
// Commstime's network, shared by the benchmarks that run it: Prefix(0) ->
// Delta -> Succ -> Prefix, Delta writing first to the consumer, then to
// Succ. One loop of the ring is four communications.
#include <utility>

#include "csp/csp.hpp"

namespace bench {

// Runs the ring, `consume(in)` reading Delta's copies from `in`, and any
// `others` beside them, in one par; ends them all by poison once `consume`
// returns (the par then throws csp::poisoned_error).
template <class Consume, class... Others>
void commstime_network(Consume&& consume, Others&&... others) {
    csp::channel<long> a, b, c, d;
    csp::par(
        [in = c.reader(), out = a.writer()] {
            out.write(0);
            for (;;) out.write(in.read());
        },
        [in = a.reader(), cons = d.writer(), succ = b.writer()] {
            for (;;) {
                const long v = in.read();
                cons.write(v);
                succ.write(v);
            }
        },
        [in = b.reader(), out = c.writer()] {
            for (;;) out.write(in.read() + 1);
        },
        [&, in = d.reader()] {
            consume(in);
            a.poison(), b.poison(), c.poison(), d.poison();
        },
        std::forward<Others>(others)...);
}

}  // namespace bench
