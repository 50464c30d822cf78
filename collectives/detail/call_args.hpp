#pragma once
// What a collective call passes besides its value that every rank must pass
// alike: its root, its op, and a reduce_scatter's block counts. A board
// meeting (shared_board.hpp, host_board.hpp) carries them in each rank's
// part, and every rank compares them after the meeting, so ranks that
// disagree all throw the same agreed_error (revocation.hpp) instead of
// reading a part nobody filled or folding with different ops. Passing
// messages, a disagreement is not seen (as in MPI); ranks left waiting for
// each other get the deadlock report (reduce_scatter checks its blocks'
// lengths: reduce_scatter.hpp).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <boost/container_hash/hash.hpp>

#include "collectives/revocation.hpp"
#include "net/type_fingerprint.hpp"

namespace csp::collectives::detail {

struct call_args {
    int root = -1;            // -1: the call has no root
    std::uint32_t op = 0;     // op_id of its op, 0: none
    std::uint64_t blocks = 0; // blocks_id of its block counts, 0: none
    friend bool operator==(const call_args&, const call_args&) = default;
};

// The same for one op type in every process of the job: the fingerprint
// messages carry for their types.
template <class Op>
std::uint32_t op_id() {
    return net::type_fingerprint<Op>();
}

// The same for equal block counts, and (but for a collision of the hash,
// which a board then misses as messages do) different for different ones.
inline std::uint64_t blocks_id(const std::vector<std::size_t>& counts) {
    return boost::hash_range(counts.begin(), counts.end()) | 1;  // never 0, "none"
}

// The error refuse_other_args throws; out of line, so that the check
// inlines to a compare on every meeting.
[[noreturn, gnu::cold, gnu::noinline]] inline void throw_other_args(std::string_view collective,
                                                                    std::string_view algorithm,
                                                                    const call_args& first, int q,
                                                                    const call_args& theirs) {
    std::string what(collective);
    if (!algorithm.empty()) what.append(" ").append(algorithm);
    if (theirs.root != first.root)
        throw agreed_error(what + ": the ranks name different roots (rank 0 names " +
                           std::to_string(first.root) + ", rank " + std::to_string(q) + " names " +
                           std::to_string(theirs.root) + "): every rank must name the same root");
    if (theirs.op != first.op)
        throw agreed_error(what + ": the ranks pass ops of different types (rank 0's and rank " + std::to_string(q) +
                           "'s): every rank must pass the same op");
    throw agreed_error(what + ": the ranks pass different block counts (rank 0's and rank " + std::to_string(q) +
                       "'s): every rank must pass the same counts");
}

// Throws unless rank q's arguments are rank 0's (`first`); every rank that
// compares the same pair throws the same words, naming the collective and
// (if not empty) the algorithm.
inline void refuse_other_args(std::string_view collective, std::string_view algorithm, const call_args& first, int q,
                              const call_args& theirs) {
    if (theirs != first) [[unlikely]]
        throw_other_args(collective, algorithm, first, q, theirs);
}

}  // namespace csp::collectives::detail
