#include "net/deadlock_answers.hpp"

#include <chrono>
#include <set>
#include <string_view>

#include "csp/quiescence.hpp"
#include "net/nameserver_words.hpp"
#include "net/socket.hpp"

namespace csp::net::detail {

namespace {

// How long a sample may wait for the runtime to idle: a node busy for
// longer is not quiet, and says so.
constexpr auto sample_patience = std::chrono::milliseconds(100);
// A blocked process's line is cut to fit the protocol's line limit.
constexpr std::size_t max_text = max_line - 100;

std::string one_line(std::string text) {
    if (text.size() > max_text) text = text.substr(0, max_text) + "...";
    for (char& c : text)
        if (c == '\n' || c == '\r') c = ' ';
    return text;
}

}  // namespace

std::string report_for_node(const std::string& report, int rank, std::size_t others_kept) {
    static constexpr std::string_view gap = "\n  ";
    std::vector<std::string_view> lines;
    const std::string_view all(report);
    for (std::size_t from = 0;;) {
        const std::size_t at = all.find(gap, from);
        lines.push_back(all.substr(from, at == std::string_view::npos ? std::string_view::npos : at - from));
        if (at == std::string_view::npos) break;
        from = at + gap.size();
    }
    const std::string own = "node " + std::to_string(rank) + ": ";
    std::size_t others = 0;
    std::set<std::string_view> other_nodes;
    for (std::size_t i = 1; i < lines.size(); ++i)
        if (lines[i].rfind(own, 0) != 0) {
            ++others;
            other_nodes.insert(lines[i].substr(0, lines[i].find(':')));
        }
    if (others <= others_kept) return report;
    std::string text(lines[0]);
    for (std::size_t i = 1; i < lines.size(); ++i)
        if (lines[i].rfind(own, 0) == 0) text.append(gap).append(lines[i]);
    text.append(gap)
        .append("and " + std::to_string(others) + (others == 1 ? " line" : " lines") + " about " +
                std::to_string(other_nodes.size()) + (other_nodes.size() == 1 ? " other node" : " other nodes") +
                ", left out here: csp-launch, or the job's csp-nameserver, prints the whole report");
    return text;
}

void deadlock_answers::send_line(std::string line) {
    line += '\n';
    try {
        write_all(fd_, line.data(), line.size(), clock::now() + std::chrono::seconds(5), "deadlock answer");
    } catch (const net_error&) {
        // The nameserver stalled (this wave will not complete) or the
        // connection is ending (its reader will see it).
    }
}

bool deadlock_answers::handle(const std::vector<std::string>& w, const std::string& line) {
    if (report_left_ > 0) {
        if (line.rfind("| ", 0) != 0) {  // not the protocol: drop the report
            report_left_ = 0;
            report_.clear();
            return false;
        }
        report_.push_back(line.substr(2));
        if (--report_left_ == 0) {
            std::string text;
            for (const auto& l : report_) text.append(text.empty() ? "" : "\n  ").append(l);
            report_.clear();
            try {
                // The switch fails the blocked processes with it, in order
                // with the departures it hands on (switchboard.cpp).
                core_.to_switch.writer().write(job_deadlock{std::move(text)});
            } catch (const csp::error&) {
                // the node has closed
            }
        }
        return true;
    }
    if (w.size() < 2) return false;
    const std::string& wave = w[1];
    if (w[0] == "PROBE" && w.size() == 2) {
        // Counters first: a message counted in after the sample was taken
        // would otherwise look like one that came before it, and the
        // sample's quiet would hide it. Read before, a later arrival shows
        // up in the next wave's counts instead.
        const std::uint64_t in = core_.traffic_in.load(std::memory_order_relaxed);
        const std::uint64_t out = core_.traffic_out.load(std::memory_order_relaxed);
        const auto s = csp::sample_quiescence(sample_patience);
        const bool quiet = s && s->quiet;
        // A message sent or received during the sample means it was not a
        // quiet moment after all.
        const bool moved = core_.traffic_in.load(std::memory_order_relaxed) != in ||
                           core_.traffic_out.load(std::memory_order_relaxed) != out;
        send_line("QUIET " + wave + " " + (quiet && !moved ? "1" : "0") + " " + std::to_string(out) + " " +
                  std::to_string(in) + " " + std::to_string(s ? s->activity : 0));
        return true;
    }
    if (w[0] == "DESCRIBE" && w.size() == 2) {
        const auto s = csp::sample_quiescence(sample_patience, true);
        const bool quiet = s && s->quiet;
        if (quiet) {
            for (const auto& text : s->blocked) send_line("BLOCKED " + wave + " " + one_line(text));
            for (const auto& text : core_.unopened_ports_with_messages()) send_line("BLOCKED " + wave + " " + text);
        }
        send_line("DESCRIBED " + wave + " " + (quiet ? "1" : "0") + " " + std::to_string(s ? s->activity : 0));
        return true;
    }
    if (w[0] == "STATUS" && w.size() == 2) {
        // Every program process, blocked or not, when the runtime idles; a
        // runtime that never idles is computing.
        const auto s = csp::sample_quiescence(sample_patience, true);
        if (!s) send_line("STATE " + wave + " busy: a process kept computing for " +
                          std::to_string(sample_patience.count()) + " ms");
        else
            for (const auto& text : s->blocked) send_line("STATE " + wave + " " + one_line(text));
        for (const auto& text : core_.unopened_ports_with_messages()) send_line("STATE " + wave + " " + text);
        send_line("STATED " + wave);
        return true;
    }
    if (w[0] == "DEADLOCK" && w.size() == 3) {
        try {
            report_left_ = std::stoul(w[2]);
        } catch (const std::exception&) {
            return false;
        }
        report_.clear();
        return true;
    }
    return false;
}

}  // namespace csp::net::detail
