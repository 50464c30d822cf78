#include "net/nameserver_protocol.hpp"

#include <unistd.h>

#include <cerrno>

#include "csp/alt.hpp"
#include "iosched/io_error.hpp"
#include "iosched/wait.hpp"
#include "net/errors.hpp"

namespace csp::net::detail {

std::optional<std::string> line_connection::read_line(clock::time_point deadline, const csp::reader<bool>* stop) {
    for (;;) {
        if (const auto nl = buf_.find('\n'); nl != std::string::npos) {
            if (nl > max_line) throw net_error(what_ + ": line longer than " + std::to_string(max_line) + " bytes");
            std::string line = buf_.substr(0, nl);
            buf_.erase(0, nl + 1);
            if (!line.empty() && line.back() == '\r') line.pop_back();
            return line;
        }
        if (buf_.size() > max_line)
            throw net_error(what_ + ": line longer than " + std::to_string(max_line) + " bytes");
        char chunk[512];
        const ssize_t n = ::read(fd_.get(), chunk, sizeof chunk);
        if (n > 0) {
            buf_.append(chunk, static_cast<std::size_t>(n));
        } else if (n == 0) {
            return std::nullopt;
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            bool timed_out;
            try {
                if (stop) {
                    bool ignored;
                    try {
                        const auto which = csp::select(csp::io::readable(fd_.get()), csp::input(*stop, ignored),
                                                       csp::deadline(deadline));
                        if (which == 1) return std::nullopt;
                        timed_out = which == 2;
                    } catch (const csp::poisoned_error&) {
                        return std::nullopt;  // the owner is stopping
                    }
                } else {
                    timed_out = csp::select(csp::io::readable(fd_.get()), csp::deadline(deadline)) == 1;
                }
            } catch (const csp::io::io_error& e) {
                // The wait, not the read, may be the first to see a reset.
                reset_ = e.system_error() == ECONNRESET;
                throw;
            }
            if (timed_out) throw net_error(what_ + ": timed out waiting for an answer");
        } else if (errno != EINTR) {
            reset_ = errno == ECONNRESET;
            throw net_error(what_ + ": " + error_text(errno));
        }
    }
}

void line_connection::write_line(const std::string& line, clock::time_point deadline) {
    const std::string out = line + "\n";
    write_all(fd_.get(), out.data(), out.size(), deadline, what_);
}

}  // namespace csp::net::detail
