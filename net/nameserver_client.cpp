#include "net/nameserver_client.hpp"

#include <algorithm>
#include <cctype>

#include "csp/deadline_after.hpp"
#include "net/errors.hpp"
#include "net/nameserver_protocol.hpp"

namespace csp::net {
namespace {

detail::line_connection dial(const endpoint& ns, clock::time_point deadline, give_up stop = nullptr) {
    try {
        return detail::line_connection(connect_to(ns, deadline, stop), "nameserver at " + ns.str());
    } catch (const gave_up&) {
        throw;
    } catch (const net_error& e) {
        // "cannot connect to HOST:PORT: Connection refused" -> "connection refused"
        const std::string what = e.what();
        const auto colon = what.rfind(": ");
        std::string why = colon == std::string::npos ? what : what.substr(colon + 2);
        if (!why.empty()) why[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(why[0])));
        throw nameserver_error("cannot reach the nameserver at " + ns.str() + " (" + why +
                               "); start csp-nameserver or run under csp-launch");
    }
}

std::string ask(detail::line_connection& c, const std::string& request, clock::time_point deadline,
                give_up stop = nullptr) {
    c.write_line(request, deadline);
    auto answer = c.read_line(deadline, stop);
    if (!answer && stop) throw gave_up("gave up waiting for the answer to '" + request + "' (the node closed)");
    if (!answer) throw nameserver_error(c.what() + " closed the connection without answering '" + request + "'");
    if (answer->rfind("ERR ", 0) == 0) throw nameserver_error(c.what() + ": " + answer->substr(4));
    return *answer;
}

int to_int(const std::string& s, const std::string& in) {
    try {
        return std::stoi(s);
    } catch (const std::logic_error&) {
        throw nameserver_error("malformed answer from the nameserver: '" + in + "'");
    }
}

}  // namespace

registration register_node(const endpoint& ns, const std::string& job, int rank, int size, const endpoint& at,
                           clock::time_point deadline) {
    auto c = dial(ns, deadline);
    const std::string answer = ask(c,
                                   "REGISTER " + job + " " + std::to_string(rank) + " " + std::to_string(size) + " " +
                                       at.host + " " + std::to_string(at.port),
                                   deadline);
    const auto w = detail::split_words(answer);
    if (w.size() != 3 || w[0] != "OK") throw nameserver_error("malformed answer from the nameserver: '" + answer + "'");
    registration r;
    r.rank = to_int(w[1], answer);
    r.size = to_int(w[2], answer);
    r.unread = c.unread();
    r.connection = c.release();
    return r;
}

endpoint lookup(const endpoint& ns, const std::string& job, int rank, clock::time_point deadline, give_up stop) {
    auto c = dial(ns, deadline, stop);
    const auto wait = std::max<clock::duration>(deadline - clock::now(), clock::duration::zero());
    const std::string answer =
        ask(c,
            "LOOKUP " + job + " " + std::to_string(rank) + " " +
                std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(wait).count()),
            deadline_after(deadline, std::chrono::seconds(1)), stop);
    const auto w = detail::split_words(answer);
    if (w.size() == 2 && w[0] == "ENDED")
        throw rank_ended_error("rank " + std::to_string(rank) + " of job '" + job +
                               "' has ended its registration with the nameserver (it left, died or was killed)");
    if (w.size() != 3 || w[0] != "AT") throw nameserver_error("malformed answer from the nameserver: '" + answer + "'");
    return endpoint{w[1], static_cast<std::uint16_t>(to_int(w[2], answer))};
}

job_listing list_job(const endpoint& ns, const std::string& job, clock::time_point deadline) {
    auto c = dial(ns, deadline);
    const std::string answer = ask(c, "LIST " + job, deadline);
    const auto w = detail::split_words(answer);
    if (w.size() < 2 || w[0] != "JOB") throw nameserver_error("malformed answer from the nameserver: '" + answer + "'");
    job_listing out;
    out.size = to_int(w[1], answer);
    for (std::size_t i = 2; i < w.size(); ++i) {
        const auto eq = w[i].find('=');
        if (eq == std::string::npos) throw nameserver_error("malformed answer from the nameserver: '" + answer + "'");
        out.nodes.emplace_back(to_int(w[i].substr(0, eq), answer), endpoint::parse(w[i].substr(eq + 1)));
    }
    return out;
}

}  // namespace csp::net
