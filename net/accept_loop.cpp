#include "net/accept_loop.hpp"

#include "csp/alt.hpp"
#include "iosched/wait.hpp"

namespace csp::net {

void accept_until_stopped(int listener, csp::reader<bool> stop, const std::function<void(unique_fd)>& serve) {
    try {
        for (;;) {
            bool ignored;
            csp::select(csp::io::readable(listener), csp::input(stop, ignored));
            while (unique_fd fd = accept_from(listener)) serve(std::move(fd));
        }
    } catch (const csp::poisoned_error&) {
        // stopped
    }
}

}  // namespace csp::net
