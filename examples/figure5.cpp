// Aspen's Figure 5: two reductions at once on overlapping ranks, wired as
// processes by the program's root. Four workers p[0..3] each contribute to
// r1 (a sum, delivered to p[0] and p[2]); p[1] and p[2] also contribute to
// r2 (a product, delivered to p[3]). The workers only write and read channel
// ends; they compute between contributing and collecting.
//
//   ./build/examples/figure5 [rounds] [--export-promela FILE ...]   (model_flags.hpp)
#include <cstdio>
#include <exception>
#include <string>

#include "arguments.hpp"
#include "collectives/flow.hpp"
#include "csp/csp.hpp"
#include "model_flags.hpp"

namespace cc = csp::collectives;

int main(int argc, char** argv) try {
    auto flags = examples::model_flags::take(argc, argv);
    examples::at_most(argc, argv, 1, "[rounds]");
    const int rounds = argc > 1 ? examples::number<int>(argv[1], "rounds", 1) : 3;
    bool right = true;
    flags.run("figure5", [&] { csp::run([&] {
        cc::reduction<long, cc::sum> r1({0, 1, 2, 3}, {0, 2}, {}, "r1");
        cc::reduction<long, cc::product> r2({1, 2}, {3}, {}, "r2");
        auto worker = [&](int me) {
            return csp::proc("p[" + std::to_string(me) + "]", [&, me] {
                for (long round = 1; round <= rounds; ++round) {
                    const long x = me + round;
                    r1.contribution(me).write(x);
                    if (me == 1 || me == 2) r2.contribution(me).write(x);
                    long busy = 0;  // work that overlaps both reductions
                    for (long i = 0; i < 100000; ++i) busy += i % (me + 2);
                    if (me == 0 || me == 2) {
                        const long sum = r1.result(me).read();
                        right &= sum == 6 + 4 * round;
                        std::printf("round %ld: p[%d] got r1 = %ld (sum of all four)\n", round, me, sum);
                    }
                    if (me == 3) {
                        const long product = r2.result(me).read();
                        right &= product == (1 + round) * (2 + round);
                        std::printf("round %ld: p[3] got r2 = %ld (product of p[1] and p[2])\n", round, product);
                    }
                    if (busy < 0) std::puts("");
                }
                r1.contribution(me).retire();
                if (me == 1 || me == 2) r2.contribution(me).retire();
            });
        };
        csp::par(r1.network(), r2.network(), worker(0), worker(1), worker(2), worker(3));
    }); });
    return right ? 0 : 1;
} catch (const std::exception& e) {
    std::fprintf(stderr, "figure5: %s\n", e.what());
    return 1;
}
