#pragma once
// Where the messaging layer reports faults it handled by itself (a refused
// connection, a malformed frame, a peer that died): one line each, to stderr
// unless a sink is installed. Lines read "csp.net job/rank: what happened".
#include <functional>
#include <string>

namespace csp::net {

using log_sink = std::function<void(const std::string& line)>;

// Replaces the sink for the whole process (nullptr restores stderr); returns
// the previous one. Sinks may be called from any thread.
log_sink set_log_sink(log_sink sink);

void log_line(const std::string& line);

}  // namespace csp::net
