// The two-process network of the paper's first listing: a producer sends
// numbers down a channel to a consumer that prints them, then both stop.
#include <cstdio>

#include "csp/csp.hpp"

int main() {
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

    const auto [unused, sum] = csp::run([&] {
        return csp::par(csp::proc("producer", producer), csp::proc("consumer", consumer));
    });
    (void)unused;
    std::printf("sum %d\n", sum);
    return sum == 45 ? 0 : 1;
}
