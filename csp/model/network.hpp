#pragma once
// A process network as a model: channels, and per process the sequence of
// its communications with its par structure. Recorded from a run
// (recorder.hpp) or built by hand, then exported as CSPm (cspm.hpp),
// Promela (promela.hpp) or a Graphviz picture (dot.hpp).
//
//   model::network net;
//   auto a = net.add_channel("a"), b = net.add_channel("b");
//   auto root = net.add_process("main"), p = net.add_process("left"), q = net.add_process("right");
//   net.par(root, {p, q});
//   net.send(p, a); net.receive(p, b);      // crossed writes: deadlocks
//   net.send(q, b); net.receive(q, a);
//
// Values are not part of the model: a communication is its channel and
// direction. That is exact for networks whose structure does not depend on
// the data (collectives depend only on rank and size).
#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace csp::model {

enum class direction { send, receive };

struct channel_decl {
    std::string name;
    // 0: rendezvous. Otherwise sends complete without a reader while fewer
    // than `capacity` values wait.
    std::size_t capacity = 0;
};

// A barrier as the model holds it: one event that every process with a
// sync step on it takes part in (occam-pi's BARRIER, CSP's multiway
// synchronisation). A recorded barrier whose phases had different members
// (enroll, resign) is one barrier_decl per set of members.
struct barrier_decl {
    std::string name;
};

struct step {
    // choice: an alternation whose guards were all channel ends; channel and
    // dir are the branch the run took, process::offers holds what it offered.
    // sync: a barrier sync, with every other member of `barrier`.
    enum class kind { communicate, par, choice, sync };
    kind what = kind::communicate;
    std::size_t channel = 0;  // communicate, choice
    direction dir = direction::send;
    std::vector<std::size_t> children;  // par: the processes it starts and waits for
    std::size_t barrier = 0;            // sync
    // On a channel: a communication or an alternation's.
    bool communicates() const noexcept { return what == kind::communicate || what == kind::choice; }
};

// One channel end an alternation offered.
struct offer {
    std::size_t channel = 0;
    direction dir = direction::receive;
    friend auto operator<=>(const offer&, const offer&) = default;
};

struct process {
    std::string name;
    std::vector<step> body;
    // For each choice step (by its index in body): the channel ends its
    // alternation offered, the branch taken among them. Kept beside the body
    // so that the common step stays small.
    std::map<std::size_t, std::vector<offer>> offers;
    // Set when the process chose in an alternation: the model holds the
    // branch the recorded run took, not the choice.
    bool alternation_recorded_as_taken = false;
    // A daemon (csp/process_group.hpp): a service of the runtime, not part
    // of the program's network (see program_view).
    bool daemon = false;
};

struct network {
    std::vector<channel_decl> channels;
    std::vector<barrier_decl> barriers;
    std::vector<process> processes;  // processes[0] runs the rest
    // What the model does not capture; exporters write these as comments.
    std::vector<std::string> notes;

    // Compiled in the model library: every file that includes a
    // communicator sees this header, and would otherwise instantiate the
    // containers of a whole network.
    std::size_t add_channel(std::string name, std::size_t capacity = 0);
    std::size_t add_process(std::string name);
    std::size_t add_barrier(std::string name);
    void send(std::size_t p, std::size_t c);
    void receive(std::size_t p, std::size_t c);
    void par(std::size_t p, std::vector<std::size_t> children);
    // A sync of process p on barrier b: done when every member has synced.
    void sync(std::size_t p, std::size_t b);
    // An alternation of process p over `offered` channel ends that took
    // offered[taken].
    void choice(std::size_t p, std::vector<offer> offered, std::size_t taken);

    // Communications recorded on channel c, by direction.
    std::size_t count(std::size_t c, direction d) const;
};

// Who wrote to and who read from each channel (process indices), counting
// only the processes marked in `included` (all when it is empty).
struct channel_ends {
    std::vector<std::set<std::size_t>> writers, readers;
};
channel_ends ends_of(const network& net, const std::vector<bool>& included = {});

// The members of each barrier: the processes with a sync step on it
// (counting only those marked in `included`, all when it is empty).
std::vector<std::set<std::size_t>> members_of(const network& net, const std::vector<bool>& included = {});

// A name that CSPm, Promela and DOT all accept: letters, digits and '_',
// starting with a letter, and at most 48 characters whatever the label.
std::string identifier(const std::string& prefix, std::size_t index, const std::string& label);

// `text` made safe for one line of a comment in any of the export formats:
// control characters (a newline would end a CSPm comment) become spaces, and
// "*/" (which would end a Promela one) is broken up.
std::string comment_text(const std::string& text);

// The network the exporters write, from a recorded one:
//  - daemon processes are left out, and with them every communication on a
//    channel a daemon used (a request to the IO scheduler, a port filled by
//    a node's network processes): such a channel has an end outside the
//    program's network, so keeping the other end would make a process wait
//    in the model for a partner that is not there. A note names them.
//  - likewise every barrier a daemon synced on: its phases would wait in
//    the model for a member that is not there.
//  - processes[0] stays first; the rest keep their order.
network program_view(const network& net);

// Which processes a par started (the others, processes[0] among them, run
// from the start: a node's own processes, children of a left-out daemon).
std::vector<bool> started_by_par(const network& net);

// A process's body with its loops folded: each run is one pass over the
// steps [begin, end) of the body, made `times` times in a row. Straight
// stretches are runs with times == 1. A repetition is folded when it saves
// at least a few steps; the runs cover the body in order. Alternations over
// the same ends count as the same step whichever branch they took, so a
// folded loop holding one was seen to go on the same way after each branch
// it took: the exporters write it there as the choice it was.
struct run {
    std::size_t begin = 0, end = 0;
    std::size_t times = 1;
};
std::vector<run> fold(const process& proc);

// The folded runs of every process, and the pass count N they are written
// against: the smallest count of a folded loop (0 when nothing folded). A
// loop of N or N + 1 passes is written so (the processes of one cycle, like
// Commstime's or a ring's, make N laps and one more step or not), so that
// an exported model can be checked for another run length by changing one
// line; other counts are written as recorded. count_text() writes a count.
struct folded_network {
    std::vector<std::vector<run>> runs;  // per process
    std::size_t n = 0;
};
folded_network fold_all(const network& net);

// The branches the passes of folded run `r` took at the choice step
// `position` steps into its cycle, in the order offered.
std::vector<offer> branches_taken(const process& proc, const run& r, std::size_t position);

// Said in an exported file when some alternation is written as fewer
// branches than it offered.
inline constexpr const char* alternation_note =
    "an alternation outside a repeated loop, or over guards other than channel ends, is written as the "
    "branch the run took: what its other guards would have led to was not seen";
std::string count_text(std::size_t times, std::size_t n);

}  // namespace csp::model
