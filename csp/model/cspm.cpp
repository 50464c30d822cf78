#include "csp/model/cspm.hpp"

#include <set>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace csp::model {

namespace {

// A straight stretch of events is split into definitions of at most this
// many, so that no process text nests deeper than that.
constexpr std::size_t max_chain = 64;

std::string set_of(const std::set<std::size_t>& s) {
    std::ostringstream os;
    os << '{';
    bool first = true;
    for (auto x : s) os << (first ? "" : ", ") << x, first = false;
    os << '}';
    return os.str();
}

class process_writer {
public:
    process_writer(const network& net, const channel_ends& ends, const std::vector<std::set<std::size_t>>& members,
                   const std::vector<bool>& started, const folded_network& folded, std::size_t p)
        : net_(net), ends_(ends), members_(members), started_(started), folded_(folded), p_(p),
          me_(std::to_string(p)), name_("P" + me_) {}

    // Writes the definitions of process p (its alphabet is known after) and
    // adds what was folded to `folds`.
    void write(std::ostream& os, std::vector<std::string>& folds) {
        const auto& proc = net_.processes[p_];
        std::ostringstream text;
        write_definitions(text, folds);
        os << "-- " << comment_text(proc.name) << " (process " << p_ << ")"
           << (recorded_as_taken() ? ": its alternations as the branches taken" : "") << '\n'
           << text.str();
    }

    // Some alternation of it is written as fewer branches than it offered.
    bool recorded_as_taken() const { return net_.processes[p_].alternation_recorded_as_taken || partial_choice_; }

private:
    void write_definitions(std::ostream& os, std::vector<std::string>& folds) {
        const auto& proc = net_.processes[p_];
        if (started_[p_]) alphabet_.insert("go." + me_), alphabet_.insert("finish." + me_);
        const auto& runs = folded_.runs[p_];
        // Definition k starts run k; the text of run k ends by going on to k + 1.
        const std::string end = started_[p_] ? "finish." + me_ + " -> SKIP" : "SKIP";
        auto next = [&](std::size_t k) { return k + 1 < runs.size() ? def(k + 1, runs) : end; };
        head_ = started_[p_] ? "go." + me_ + " -> " : "";
        // The first straight chunk is P<i> itself; otherwise P<i> leads to run 0.
        if (runs.empty() || runs[0].times > 1)
            os << name_ << " = " << head_ << (runs.empty() ? end : def(0, runs)) << '\n';
        for (std::size_t k = 0; k < runs.size(); ++k) {
            const run& r = runs[k];
            if (r.times == 1) {
                // Chunks of at most max_chain steps, each going on to the next.
                for (std::size_t b = r.begin; b < r.end; b += max_chain) {
                    const std::size_t e = std::min(r.end, b + max_chain);
                    const std::string rest = e < r.end ? chunk_name(k, e - r.begin) : next(k);
                    os << chunk_name(k, b - r.begin) << " = " << (k == 0 && b == r.begin ? head_ : "")
                       << chain(b, e, rest) << '\n';
                }
            } else {
                const std::string loop = name_ + "_" + std::to_string(k);
                os << loop << "(n) = if n == 0 then " << next(k) << " else "
                   << chain(r.begin, r.end, loop + "(n - 1)", &r) << '\n';
                folds.push_back(comment_text(proc.name) + " (P" + me_ + "): " + std::to_string(r.end - r.begin) +
                                " step" + (r.end - r.begin == 1 ? "" : "s") + " repeated " +
                                count_text(r.times, folded_.n) + " times, as " + loop);
            }
        }
    }

public:
    // Its go and finish events and its children's, every event of every
    // channel end it has (ends_of): the same sets the partners' alphabets
    // hold for it, so an end it offers synchronises with them even in a
    // pass that did not take it; and the event of each barrier it is a
    // member of, which the alphabetised parallel then makes wait for all.
    std::string alphabet() {
        for (std::size_t b = 0; b < net_.barriers.size(); ++b)
            if (members_[b].count(p_)) alphabet_.insert(net_.barriers[b].name);
        for (std::size_t c = 0; c < net_.channels.size(); ++c) {
            if (ends_.writers[c].count(p_)) add_end(c, direction::send);
            if (ends_.readers[c].count(p_)) add_end(c, direction::receive);
        }
        std::string singles = "{";
        for (const auto& e : alphabet_) singles += (singles.size() > 1 ? ", " : "") + e;
        singles += "}";
        if (sets_.empty()) return singles;
        std::string out = "Union({";
        if (!alphabet_.empty()) out += singles + ", ";
        bool first = true;
        for (const auto& s : sets_) out += (first ? "" : ", ") + s, first = false;
        return out + "})";
    }

private:
    // The name under which run k is defined (with its count, for a loop).
    std::string def(std::size_t k, const std::vector<run>& runs) const {
        return runs[k].times == 1 ? chunk_name(k, 0)
                                  : name_ + "_" + std::to_string(k) + "(" + count_text(runs[k].times, folded_.n) + ")";
    }
    // Chunk `offset` steps into run k.
    std::string chunk_name(std::size_t k, std::size_t offset) const {
        std::string out = name_;
        if (k == 0 && offset == 0) return out;
        out.append("_").append(std::to_string(k));
        if (offset != 0) out.append("_").append(std::to_string(offset));
        return out;
    }

    // Steps [b, e) of the body as a prefix chain going on to `rest`; `loop`
    // is the folded run they belong to, if any.
    std::string chain(std::size_t b, std::size_t e, const std::string& rest, const run* loop = nullptr) {
        std::string text = rest;
        for (std::size_t i = e; i-- > b;) text = prefix(i, text, loop);
        return text;
    }

    std::string prefix(std::size_t i, const std::string& rest, const run* loop) {
        const step& s = net_.processes[p_].body[i];
        if (s.what == step::kind::par) {
            std::string out;
            for (std::size_t c : s.children) {
                const std::string cs = std::to_string(c);
                out += "go." + cs + " -> ";
                alphabet_.insert("go." + cs);
                alphabet_.insert("finish." + cs);
            }
            for (std::size_t c : s.children) out += "finish." + std::to_string(c) + " -> ";
            return out + rest;
        }
        if (s.what == step::kind::choice) {
            // In a folded loop: a choice over the branches its passes took.
            // Elsewhere the run shows only what followed the branch it took.
            const auto branches = loop ? branches_taken(net_.processes[p_], *loop, i - loop->begin)
                                       : std::vector<offer>{{s.channel, s.dir}};
            if (branches.size() < net_.processes[p_].offers.at(i).size()) partial_choice_ = true;
            if (branches.size() > 1) {
                std::string out = "(";
                for (std::size_t k = 0; k < branches.size(); ++k)
                    out += (k ? " [] " : "") + end_prefix(branches[k].channel, branches[k].dir, "SKIP");
                return out + ") ; " + rest;
            }
            return end_prefix(branches[0].channel, branches[0].dir, rest);
        }
        if (s.what == step::kind::sync) return net_.barriers[s.barrier].name + " -> " + rest;
        return end_prefix(s.channel, s.dir, rest);
    }

    // One communication on channel c in direction d, going on to `rest`:
    // c.writer.reader offered to every process on the other side, or c_in /
    // c_out of a buffer.
    std::string end_prefix(std::size_t c, direction d, const std::string& rest) const {
        const auto& ch = net_.channels[c];
        const bool send = d == direction::send;
        if (ch.capacity > 0) return ch.name + (send ? "_in." : "_out.") + me_ + " -> " + rest;
        const auto& others = send ? ends_.readers[c] : ends_.writers[c];
        if (others.size() == 1) {
            const std::string o = std::to_string(*others.begin());
            return (send ? ch.name + "." + me_ + "." + o : ch.name + "." + o + "." + me_) + " -> " + rest;
        }
        const std::string var = send ? "r" : "w";
        const std::string event = send ? ch.name + "." + me_ + ".r" : ch.name + ".w." + me_;
        return "([] " + var + " : " + set_of(others) + " @ " + event + " -> " + rest + ")";
    }

    void add_end(std::size_t c, direction d) {
        const auto& ch = net_.channels[c];
        const bool send = d == direction::send;
        if (ch.capacity > 0) {
            alphabet_.insert(ch.name + (send ? "_in." : "_out.") + me_);
            return;
        }
        const auto& others = send ? ends_.readers[c] : ends_.writers[c];
        if (others.size() == 1) {
            const std::string o = std::to_string(*others.begin());
            alphabet_.insert(send ? ch.name + "." + me_ + "." + o : ch.name + "." + o + "." + me_);
        } else {
            const std::string var = send ? "r" : "w";
            const std::string event = send ? ch.name + "." + me_ + ".r" : ch.name + ".w." + me_;
            sets_.insert("{" + event + " | " + var + " <- " + set_of(others) + "}");
        }
    }

    const network& net_;
    const channel_ends& ends_;
    const std::vector<std::set<std::size_t>>& members_;
    const std::vector<bool>& started_;
    const folded_network& folded_;
    std::size_t p_;
    std::string me_, name_, head_;
    bool partial_choice_ = false;
    std::set<std::string> alphabet_;  // single events
    std::set<std::string> sets_;      // comprehensions
};

}  // namespace

void write_cspm(std::ostream& os, const network& recorded, const cspm_options& options) {
    if (recorded.processes.empty()) throw std::invalid_argument("write_cspm: the network has no process");
    const network net = program_view(recorded);
    const std::size_t n = net.processes.size();
    const auto started = started_by_par(net);
    const channel_ends ends = ends_of(net);
    const auto members = members_of(net);
    const folded_network folded = fold_all(net);

    // The processes first: what they fold goes into the header.
    std::ostringstream body;
    std::vector<std::string> folds, alphabets;
    bool as_taken = false;
    for (std::size_t p = 0; p < n; ++p) {
        process_writer w(net, ends, members, started, folded, p);
        w.write(body, folds);
        alphabets.push_back(w.alphabet());
        as_taken = as_taken || w.recorded_as_taken();
        body << '\n';
    }

    os << "-- " << comment_text(options.title) << ": exported by csp::model.\n";
    for (const auto& note : net.notes) os << "-- Note: " << comment_text(note) << ".\n";
    if (as_taken) os << "-- Note: " << alternation_note << ".\n";
    for (const auto& f : folds) os << "-- Folded: " << f << ".\n";
    os << "-- Load in FDR4: refines FILE, or open it in the FDR4 GUI.\n\n";
    if (folded.n > 0)
        os << "-- N: the recorded pass count of the loops written against it (N or N + 1\n"
              "-- passes). Another N >= 1 models another run length when those loops are the\n"
              "-- laps of one cycle, as in a ring; a check's cost grows with N.\n"
              "N = "
           << folded.n << "\n\n";
    os << "Procs = {0.." << n - 1 << "}\n";
    os << "channel go, finish : Procs\n";
    for (const auto& ch : net.channels) {
        if (ch.capacity == 0) os << "channel " << ch.name << " : Procs.Procs\n";
        else os << "channel " << ch.name << "_in, " << ch.name << "_out : Procs\n";
    }
    // A barrier is one event its members all take part in.
    for (const auto& b : net.barriers) os << "channel " << b.name << '\n';
    os << '\n';

    // Buffers: h values held, k still to come.
    std::vector<std::size_t> buffers;
    for (std::size_t c = 0; c < net.channels.size(); ++c) {
        const auto& ch = net.channels[c];
        if (ch.capacity == 0) continue;
        buffers.push_back(c);
        os << "BUF_" << ch.name << "(h, k) =\n"
           << "    (h < " << ch.capacity << " and k > 0) & ([] w : " << set_of(ends.writers[c]) << " @ " << ch.name
           << "_in.w -> BUF_" << ch.name << "(h + 1, k - 1))\n"
           << "    [] h > 0 & ([] r : " << set_of(ends.readers[c]) << " @ " << ch.name << "_out.r -> BUF_"
           << ch.name << "(h - 1, k))\n"
           << "    [] k == 0 & SKIP\n";
    }
    if (!buffers.empty()) os << '\n';

    os << body.str();
    // CSPm joins the clauses of one function only when they are adjacent.
    for (std::size_t p = 0; p < n; ++p) os << "PROC(" << p << ") = P" << p << '\n';
    os << '\n';
    for (std::size_t p = 0; p < n; ++p) os << "ALPHA(" << p << ") = " << alphabets[p] << '\n';
    os << '\n';

    os << "PROCESSES = || i : Procs @ [ALPHA(i)] PROC(i)\n";
    if (buffers.empty()) {
        os << "SYSTEM = PROCESSES\n";
    } else {
        // Buffers are named one by one: CSPm sets cannot hold processes.
        os << "BUFFER_EVENTS = {|";
        for (std::size_t i = 0; i < buffers.size(); ++i)
            os << (i ? ", " : " ") << net.channels[buffers[i]].name << "_in, " << net.channels[buffers[i]].name
               << "_out";
        os << " |}\n";
        os << "ALL_BUFFERS = ";
        for (std::size_t i = 0; i < buffers.size(); ++i) {
            const auto c = buffers[i];
            os << (i ? "\n    ||| " : "") << "BUF_" << net.channels[c].name << "(0, "
               << count_text(net.count(c, direction::send), folded.n) << ")";
        }
        os << "\nSYSTEM = PROCESSES [| BUFFER_EVENTS |] ALL_BUFFERS\n";
    }
    os << "\nassert SYSTEM :[deadlock free [F]]\n";
    os << "assert SYSTEM :[divergence free]\n";
    if (!options.spec.empty()) os << '\n' << options.spec << "\nassert SPEC [T= SYSTEM\n";
}

}  // namespace csp::model
