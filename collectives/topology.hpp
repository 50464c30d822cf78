#pragma once
// Who talks to whom: pure functions of (rank, size, root), shared by the
// algorithms, the tests and the model export.
//
// Binomial tree. Trees for any root use virtual ranks, v = (rank - root) mod
// size, so the root is v = 0. A node's parent clears its lowest set bit; its
// children add each power of two below that bit. Seven ranks, root 0:
//
//          0                 node v holds the ranks [v, v + lowbit(v)):
//        / | \               children in ascending order hold ascending,
//       1  2  4              adjacent ranges, so folding own value with the
//          |  | \            children's in that order keeps rank order.
//          3  5  6
//
// Depth is ceil(log2 size); every non-root has one parent.
//
// Schedules. The butterfly and Aspen's reduce are given as data: rounds of
// sender -> receiver transfers (schedule.hpp runs them). That keeps them
// testable, printable and exportable as models.
#include <bit>
#include <cstddef>
#include <iosfwd>
#include <string>
#include <vector>

#include "csp/error.hpp"

namespace csp::collectives::topology {

inline int ceil_log2(int n) { return n <= 1 ? 0 : std::bit_width(static_cast<unsigned>(n - 1)); }
// The largest power of two not above n (n >= 1).
inline int floor_pow2(int n) { return static_cast<int>(std::bit_floor(static_cast<unsigned>(n))); }

// usage_error naming the bad argument (check's slow path).
[[noreturn]] void bad_arguments(int rank, int size, int root);
inline void check(int rank, int size, int root) {
    if (size < 1 || rank < 0 || rank >= size || root < 0 || root >= size) bad_arguments(rank, size, root);
}

inline int to_virtual(int rank, int size, int root) { return (rank - root + size) % size; }
inline int to_real(int vrank, int size, int root) { return (vrank + root) % size; }

// -1 for the root.
inline int binomial_parent(int rank, int size, int root = 0) {
    check(rank, size, root);
    int v = to_virtual(rank, size, root);
    if (v == 0) return -1;
    return to_real(v & (v - 1), size, root);
}

// Nearest (smallest subtree) first.
inline std::vector<int> binomial_children(int rank, int size, int root = 0) {
    check(rank, size, root);
    int v = to_virtual(rank, size, root);
    std::vector<int> out;
    for (int mask = 1; mask < size; mask <<= 1) {
        if (v & mask) break;
        if (v + mask < size) out.push_back(to_real(v + mask, size, root));
    }
    return out;
}

// For a binomial reduce: whom a rank receives from (its children, in the
// order their values are folded) and whom it sends to (its parent, if any).
struct reduce_peers {
    std::vector<int> receive_from;
    std::vector<int> send_to;
};
inline reduce_peers binomial_reduce_peers(int rank, int size, int root = 0) {
    reduce_peers p{binomial_children(rank, size, root), {}};
    if (int parent = binomial_parent(rank, size, root); parent >= 0) p.send_to.push_back(parent);
    return p;
}

// ---- schedules ----------------------------------------------------------

enum class transfer_kind {
    combine,  // the receiver folds the value into its own
    deliver,  // the receiver takes the value as the result
};

struct transfer {
    int from;
    int to;
    transfer_kind kind = transfer_kind::combine;
    // For combine: the sender's part comes before the receiver's in rank
    // order, so the receiver computes op(received, own).
    bool sender_first = false;
    friend bool operator==(const transfer&, const transfer&) = default;
};

struct schedule {
    // Transfers of one round happen at once; a round starts at a rank when
    // that rank has finished the previous one.
    std::vector<std::vector<transfer>> rounds;
    std::vector<int> participants;  // start with a value
    std::vector<int> receivers;     // end with the result
};

std::ostream& operator<<(std::ostream& os, const schedule& s);

// Butterfly (recursive doubling) allreduce over ranks 0..size-1 that keeps
// rank order, so it serves ops that do not commute. With p2 the largest
// power of two <= size and rem = size - p2, the first 2*rem ranks pair up:
// each even one folds into the odd one above it (round 1) and gets the
// result back at the end. Six ranks (rem = 2; virtual ranks in brackets):
//
//   fold:       0->1  2->3                 [0]=1 [1]=3 [2]=4 [3]=5
//   exchange:   1<->3  4<->5   (partner = v xor 1)
//   exchange:   1<->4  3<->5   (partner = v xor 2)
//   unfold:     1=>0  3=>2
//
// 2 + log2(p2) rounds when size is not a power of two, log2(size) when it is.
schedule butterfly_schedule(int size);

// Aspen's reduce: participants P contribute, receivers R get the result; R
// may hold ranks outside P. The op must commute: participants are renumbered
// so that those who receive come first. In that numbering (0-based here):
//
//   1. If |P| is not a power of two, p2 = the largest power of two below
//      |P|; participant x >= p2 folds into x - p2 and leaves P (a receiver
//      among them becomes a non-participant receiver).
//   2. While |P| >= 2 * max(|Rp|, |Rnp|), the upper half folds into the
//      lower half and leaves.
//   3. The rest run the butterfly; its last stage keeps only the links into
//      the first k = min(max(|Rp|, |Rnp|), |P|) nodes, which then hold the
//      result.
//   4. Non-participant receivers get it from holders: one each when they are
//      no more than the holders, otherwise by concurrent binomial broadcasts
//      (every rank holding the value sends to one more each round).
//
// The paper's example: P = 1..8, R = {1, 2, 9, 10, 11}.
//   round 1: 5->1 6->2 7->3 8->4          (step 2; max(|Rp|,|Rnp|) = 3)
//   round 2: 1<->2 3<->4                  (butterfly)
//   round 3: 1<->3 4->2 (2->4 dropped)    (last stage, k = 3)
//   round 4: 1=>9 2=>10 3=>11             (step 4)
// One receiver in P gives a binomial tree reduce; R = P the butterfly.
schedule aspen_schedule(const std::vector<int>& P, const std::vector<int>& R);

}  // namespace csp::collectives::topology
