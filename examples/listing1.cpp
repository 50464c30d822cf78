// The two-process network of the paper's first listing: a producer sends
// numbers down a channel to a consumer that prints them, then both stop.
//
//   ./build/examples/listing1 [--export-promela FILE ...]   (model_flags.hpp)
#include <cstdio>
#include <exception>

#include "arguments.hpp"
#include "csp/csp.hpp"
#include "model_flags.hpp"

int main(int argc, char** argv) try {
    auto flags = examples::model_flags::take(argc, argv);
    examples::at_most(argc, argv, 0, "[--export-cspm FILE] [--export-promela FILE] [--export-dot FILE] [--trace FILE]");
    csp::channel<int> numbers{"numbers"};

    auto producer = [out = numbers.writer()]() mutable {
        for (int i = 0; i < 10; ++i) out.write(i);
        out.retire();  // no more values: the consumer's next read throws retired_error
    };
    auto consumer = [in = numbers.reader()] {
        int sum = 0;
        try {
            for (;;) {
                const int v = in.read();
                std::printf("received %d\n", v);
                sum += v;
            }
        } catch (const csp::retired_error&) {
        }
        return sum;
    };

    const auto [unused, sum] = flags.run("listing1", [&] {
        return csp::run([&] { return csp::par(csp::proc("producer", producer), csp::proc("consumer", consumer)); });
    });
    (void)unused;
    std::printf("sum %d\n", sum);
    return sum == 45 ? 0 : 1;
} catch (const std::exception& e) {
    std::fprintf(stderr, "listing1: %s\n", e.what());
    return 1;
}
