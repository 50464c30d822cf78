#include "net/accept_loop.hpp"

#include <algorithm>
#include <chrono>

#include "csp/alt.hpp"
#include "iosched/wait.hpp"

namespace csp::net {

void accept_until_stopped(int listener, csp::reader<bool> stop, const std::function<void(unique_fd)>& serve,
                          const exhaustion_policy& when_exhausted) {
    constexpr auto first_pause = std::chrono::milliseconds(10), longest_pause = std::chrono::milliseconds(1000);
    bool exhausted = false;
    std::size_t shed = 0;
    auto pause = first_pause;
    try {
        for (;;) {
            bool ignored;
            csp::select(csp::io::readable(listener), csp::input(stop, ignored));
            try {
                while (unique_fd fd = accept_from(listener)) {
                    if (exhausted) {
                        when_exhausted.log("accepting again (" + std::to_string(shed) +
                                           " unauthenticated connections were dropped meanwhile)");
                        exhausted = false;
                        shed = 0;
                        pause = first_pause;
                    }
                    serve(std::move(fd));
                }
            } catch (const out_of_descriptors& e) {
                if (!exhausted)
                    when_exhausted.log(std::string(e.what()) +
                                       "; dropping the oldest unauthenticated connections and retrying");
                exhausted = true;
                shed += when_exhausted.shed();
                csp::select(csp::input(stop, ignored), csp::timeout(pause));
                pause = std::min(pause * 2, longest_pause);
            }
        }
    } catch (const csp::poisoned_error&) {
        // stopped
    }
}

}  // namespace csp::net
