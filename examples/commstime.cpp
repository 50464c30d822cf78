// Commstime, the classic CSP context-switch benchmark.
//
//   prefix(0) --a--> delta --b--> succ --c--> prefix
//                      \--d--> consumer
//
// Each loop moves one value around the ring and out to the consumer: four
// channel communications. The consumer times N loops and reports the cost of
// one communication.
//
//   ./build/examples/commstime [loops] [--export-promela FILE ...]   (model_flags.hpp)
#include <chrono>
#include <cstdio>
#include <exception>

#include "arguments.hpp"
#include "csp/csp.hpp"
#include "model_flags.hpp"

int main(int argc, char** argv) try {
    auto flags = examples::model_flags::take(argc, argv);
    examples::at_most(argc, argv, 1, "[loops]");
    const long loops = examples::number_at(argc, argv, 1, "the number of loops", 1'000'000L, 1L);
    csp::channel<long> a{"a"}, b{"b"}, c{"c"}, d{"d"};

    auto prefix = [in = c.reader(), out = a.writer()] {
        out.write(0);
        for (;;) out.write(in.read());
    };
    auto delta = [in = a.reader(), to_consumer = d.writer(), to_succ = b.writer()] {
        for (;;) {
            const long v = in.read();
            to_consumer.write(v);
            to_succ.write(v);
        }
    };
    auto succ = [in = b.reader(), out = c.writer()] {
        for (;;) out.write(in.read() + 1);
    };
    auto consumer = [in = d.reader(), loops, a, b, c, d]() mutable {
        in.read();
        const auto start = std::chrono::steady_clock::now();
        long last = 0;
        for (long i = 0; i < loops; ++i) last = in.read();
        const std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
        // Stop the ring: every blocked process wakes with poisoned_error.
        a.poison(), b.poison(), c.poison(), d.poison();
        std::printf("commstime: %ld loops, last value %ld, %.1f ns per communication\n", loops, last,
                    took.count() / (static_cast<double>(loops) * 4));
    };

    flags.run("commstime", [&] {
        try {
            csp::run([&] {
                csp::par(csp::proc("prefix", prefix), csp::proc("delta", delta), csp::proc("succ", succ),
                         csp::proc("consumer", consumer));
            });
        } catch (const csp::poisoned_error&) {
            // The ring ends by poison: expected.
        }
    });
} catch (const std::exception& e) {
    std::fprintf(stderr, "commstime: %s\n", e.what());
    return 1;
}
