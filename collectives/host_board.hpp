#pragma once
// Where the OS processes of one host meet for a collective without passing
// messages: a POSIX shared memory segment that every rank of a
// net_communicator maps when all its ranks share this host's memory
// (node::shares_host_memory). STAPERS's intra-node aggregation for
// processes, as shared_board.hpp is for the fibers of one process: each
// rank copies its value into its slot and says it arrived; once every rank
// has arrived, each reads every slot in place.
//
// One meeting, numbered m = 1, 2, ... on the board (the same at every rank:
// the ranks call a stream's collectives in one order; one board per stream):
//  1. arrive: copy the value into part (m % sets, me), then arrived[me] = m.
//  2. Wait until arrived[q] >= m for every rank q: spin a while (letting
//     the node's other processes, and when the host has more ranks than
//     cores other programs, run between looks), then sleep.
//  3. To sleep: sleeping[me] = m, then look again. Still incomplete: receive
//     the wake message (the call's tag), a receive like any other, so a lost
//     peer fails it and a job that never completes the meeting is a
//     deadlock the report names. Complete after all: take the flag back
//     (m -> 0); if a waker took it first, its message is on the way and is
//     received.
//  4. Whoever finds the meeting complete wakes the sleepers: for each rank
//     whose sleeping flag it turns from m to 0, one wake message.
//
// Invariants
//  - No wake is lost: arrived and sleeping are read and written in one
//    total order (seq_cst). A sleeper writes its flag, then reads arrived;
//    the last rank to arrive writes arrived, then reads the flags: one of
//    them sees the other's write. The flag's m -> 0 exchange gives each
//    sleep exactly one message or none.
//  - A part is never overwritten while read. A board has s sets of parts
//    (s = 2, or 3 for a large board), meeting m using set m % s. With two
//    sets, rank r writes set m % 2 again for meeting m + 2 only after
//    meeting m + 1 completed, that is, after every rank arrived at m + 1,
//    which each does only after it finished reading meeting m. A large
//    board's user may read meeting m's parts until it arrives at m + 2 (it
//    copies a result out of them after m + 1): rank r writes that set again
//    for m + 3, after m + 2 completed.
//  - arrived[q] is in {m - 1, m, m + 1} while a rank waits for meeting m;
//    sleeping flags of past meetings never match a later m.
//  - Every rank reads every part: a type, length, root or op that differs
//    (detail/call_args.hpp), or a value too large for a part, is seen by all
//    ranks alike, so they all throw or all fall back to messages together.
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

#include "collectives/detail/call_args.hpp"
#include "collectives/tag.hpp"
#include "csp/type_name.hpp"
#include "net/errors.hpp"

namespace csp::collectives {

// The shape of a board: bytes per part (a multiple of 64, less 64 for the
// part's head) and sets of parts (2 or 3, see the invariants).
struct host_board_shape {
    std::size_t part_capacity = 16 * 1024 - 64;
    int sets = 2;
    friend bool operator==(const host_board_shape&, const host_board_shape&) = default;
};

class host_board {
public:
    // Bytes of one rank's part of one meeting on a board made with the
    // defaults; larger values go by messages or to a large board.
    static constexpr std::size_t part_capacity = host_board_shape{}.part_capacity;

    using shape = host_board_shape;
    // A large board for `size` ranks: three sets of parts, each set about
    // large_set_bytes (parts of 64 to 256 KiB). Measured with
    // bench/collectives_rank, allreduce host_memory of 1 MiB over UCX on
    // this 2-core host (2026-11-29, two runs each): at 8 ranks parts of
    // 128 KiB took 740-833 us, of 512 KiB 1,490-1,750 (OpenMPI 1,036-1,573);
    // at 2 ranks 256 KiB 117-120 us, 1 MiB 129-133. Small sets stay in the
    // caches between a rank's copying in and the others' folding.
    static shape large_shape(int size) noexcept;
    static constexpr std::size_t large_set_bytes = 1u << 20;

    // Creates a segment for `size` ranks under a fresh name (rank 0), or maps
    // the segment `name` (the others). Throws net_error naming the system
    // call that failed. A board other than the default one is allocated at
    // once (posix_fallocate), so a shared memory file system too small for
    // it fails here and not with a SIGBUS when a part is first written.
    static host_board create(int size, int rank, bool oversubscribed, shape sh = {});
    static host_board open(const std::string& name, int size, int rank, bool oversubscribed, shape sh = {});
    host_board(host_board&& other) noexcept;
    host_board& operator=(host_board&&) = delete;
    host_board(const host_board&) = delete;
    ~host_board();

    const std::string& name() const noexcept { return name_; }
    // Removes the name (rank 0, once every rank has mapped the segment); the
    // mappings stay. The destructor unlinks a name still there.
    void unlink_name();

    // What tells types apart on the board: a hash of the type's name,
    // the same in every process of one build.
    template <class T>
    static std::uint32_t type_of() {
        static const std::uint32_t id = fingerprint(csp::type_name<T>());
        return id;
    }

    struct part {
        std::uint32_t type;  // type_of the value
        bool fits;           // the bytes are in the part (else too large)
        std::uint8_t call;   // the collective's call_code (tag.hpp), 0 if not said
        std::uint32_t sequence;  // the call's tag's sequence (tag.hpp), 0 if not said
        detail::call_args args;  // the root, op and counts the rank passed (call_args.hpp)
        std::uint64_t bytes;
        const std::byte* data;
    };

    // Step 1 for this rank: returns the meeting's number. `call`: the call's
    // tag, whose collective and sequence other ranks read from this part (a
    // meeting of different calls is a usage error, not an answer); `args`:
    // the call's root and op, which other ranks compare with theirs.
    std::uint64_t arrive(std::uint32_t type, std::span<const std::byte> bytes, tag call = {},
                         detail::call_args args = {});
    // Steps 2-4 of meeting m at `comm`'s rank (this board's), with `t` the
    // call's tag (every rank's the same) for the wake messages.
    template <class C>
    void wait(C& comm, tag t, std::uint64_t m);
    // Rank q's part of meeting m (after it completed).
    part part_of(std::uint64_t m, int q) const noexcept;
    // This rank's part of meeting m, to write into after the meeting
    // completed, where no other rank reads (see allreduce's host_memory).
    std::byte* own_part(std::uint64_t m) noexcept;
    int size() const noexcept { return size_; }
    std::size_t capacity() const noexcept { return shape_.part_capacity; }
    // Meetings this rank has arrived at.
    std::uint64_t meetings() const noexcept { return meetings_; }
    // How many times this rank slept in a meeting and was woken.
    std::uint64_t wakes() const noexcept { return wakes_; }

private:
    struct control_line;
    struct part_head;
    host_board(std::string name, bool owner, int size, int rank, bool oversubscribed, shape sh);
    void map(int fd);
    // Every rank has arrived at meeting m.
    bool complete(std::uint64_t m) const noexcept;
    // Step 2: spins until complete (true) or the spin is over (false).
    bool spin(std::uint64_t m) const;
    // Step 3: whether the caller must receive a wake message.
    bool sleep(std::uint64_t m) noexcept;
    static std::uint32_t fingerprint(std::string_view type_name) noexcept;
    control_line& control(int q) const noexcept;
    bool take_sleeper(std::uint64_t m, int q) noexcept;  // q's flag m -> 0
    part_head& head(std::uint64_t m, int q) const noexcept;

    std::string name_;
    bool named_;  // this rank made the name and has not unlinked it
    int size_, rank_;
    bool oversubscribed_;  // more ranks on the host than hardware threads
    shape shape_;
    std::byte* base_ = nullptr;
    std::size_t length_ = 0;
    std::uint64_t meetings_ = 0;  // this rank's
    std::uint64_t wakes_ = 0;
};

template <class C>
void host_board::wait(C& comm, tag t, std::uint64_t m) {
    if (!complete(m) && !spin(m) && sleep(m)) {
        try {
            const auto woken = comm.template receive_any<std::uint64_t>(t);
            if (woken.value != m)
                throw std::logic_error("host board: woken for meeting " + std::to_string(woken.value) +
                                       " in meeting " + std::to_string(m));
            ++wakes_;
        } catch (const net::peer_error&) {
            // A rank left or was lost while this one slept (a receive from
            // any rank fails then). A rank leaves only after its meetings
            // completed, so if every rank has arrived the meeting is over
            // all the same: the flag is taken back, and a wake already on
            // its way stays unclaimed. Otherwise the meeting cannot complete.
            if (!complete(m)) throw;
            take_sleeper(m, rank_);
        }
    }
    // Step 4. A sleeper that has left since (it found its meeting complete
    // as above, then its program ended) needs no wake.
    for (int q = 0; q < size_; ++q) {
        if (q == rank_ || !take_sleeper(m, q)) continue;
        try {
            comm.send(q, t, m);
        } catch (const net::peer_error&) {
        }
    }
}

}  // namespace csp::collectives
