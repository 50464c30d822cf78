#pragma once
// The one accept loop: the node's listener and the nameserver both serve a
// listening socket this way.
//
// Waits until the listener is readable or `stop` is poisoned; on readability
// accepts every pending connection and hands each to `serve` (which starts
// a process for it and must not block). Returns once `stop` is poisoned;
// any other failure (the IO scheduler stopped, accept failing for a reason
// other than a connection that went away) propagates to the caller.
//
// Running out of descriptors does not stop it. The listener stays readable
// while the backlog holds connections it cannot take, so it must not simply
// retry: it reports the episode once through `log`, sheds the oldest
// connections nobody has vouched for (`shed`), and waits, 10 ms at first,
// doubling up to 1 s, before it tries again; the first connection accepted
// afterwards ends the episode (logged too).
#include <cstddef>
#include <functional>
#include <string>

#include "csp/channel.hpp"
#include "net/socket.hpp"

namespace csp::net {

struct exhaustion_policy {
    std::function<std::size_t()> shed;              // drops some connections; returns how many
    std::function<void(const std::string&)> log;
};

void accept_until_stopped(int listener, csp::reader<bool> stop, const std::function<void(unique_fd)>& serve,
                          const exhaustion_policy& when_exhausted);

}  // namespace csp::net
