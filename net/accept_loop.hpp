#pragma once
// The one accept loop: the node's listener and the nameserver both serve a
// listening socket this way.
//
// Waits until the listener is readable or `stop` is poisoned; on readability
// accepts every pending connection and hands each to `serve` (which starts
// a process for it and must not block). Returns once `stop` is poisoned;
// any other failure (the IO scheduler stopped, accept failing for a reason
// other than a connection that went away) propagates to the caller.
#include <functional>

#include "csp/channel.hpp"
#include "net/socket.hpp"

namespace csp::net {

void accept_until_stopped(int listener, csp::reader<bool> stop, const std::function<void(unique_fd)>& serve);

}  // namespace csp::net
