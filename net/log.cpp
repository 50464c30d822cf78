#include "net/log.hpp"

#include <cstdio>
#include <mutex>
#include <utility>

namespace csp::net {
namespace {
std::mutex sink_lock;
log_sink& current() {
    static log_sink s;
    return s;
}
}  // namespace

log_sink set_log_sink(log_sink sink) {
    std::lock_guard lk(sink_lock);
    return std::exchange(current(), std::move(sink));
}

void log_line(const std::string& line) {
    std::lock_guard lk(sink_lock);
    if (current()) current()(line);
    else std::fprintf(stderr, "%s\n", line.c_str());
}

}  // namespace csp::net
